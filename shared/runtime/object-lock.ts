import { createHash } from 'node:crypto';
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { LockLostError } from './handler.ts';

/** Held while a handler works on an object; `lost` aborts when another holder could have it. */
export type LockLease = {
  /** Fencing token: grows with every renewal, so a stale holder's writes can be told apart. */
  readonly token: () => number;
  readonly lost: AbortSignal;
  /**
   * Whether the lease is still ours, judged by the clock now, not by a timer that a stalled
   * process has not run yet: a process that wakes up after a pause must not act on the lease it
   * had before. Call it right before every mutation (HandlerContext.fence does).
   */
  held(): boolean;
  release(): Promise<void>;
};

export type ObjectLocks = {
  /** Waits until the lock is free (or `signal` aborts). */
  acquire(key: string, o: { signal?: AbortSignal }): Promise<LockLease>;
  /**
   * One attempt, one round trip: the lease if the lock was free, undefined if someone else holds
   * it (or the bus did not answer). Lets a caller wait with `acquire` somewhere it costs less.
   */
  tryAcquire(key: string): Promise<LockLease | undefined>;
};

export class LockAbortedError extends Error {
  override readonly name = 'LockAbortedError';
  readonly retry = true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NS_PER_MS = 1_000_000;

/**
 * Object locks across all replicas of a function, one subject per object in a stream of their
 * own that keeps one message per subject for at most the lease TTL. Taking a lock is publishing
 * on its subject expecting no message there; renewing (every TTL/3) is publishing expecting the
 * holder's own last one, so a crashed holder's message ages out and the next replica takes over.
 * Releasing deletes the holder's message by sequence rather than writing a tombstone (what a KV
 * delete does): the next acquisition is then one round trip, not three (failed create, read of
 * the tombstone, create over it), on the path of every event. Subjects are hashed object keys.
 *
 * The TTL is the stream's: the first process creates it with `ttlMs`, later ones adopt its
 * max_age (rewriting it would expire other holders' leases early). A holder counts its lease from
 * when it sent the last acknowledged write, and declares it lost a margin before that runs out
 * even if no renewal could be sent (a stalled process, a hung connection).
 */
export const objectLocks = async (
  bus: { js: JetStreamClient; jsm: JetStreamManager },
  o: { stream?: string; owner: string; ttlMs?: number; replicas?: number },
): Promise<ObjectLocks> => {
  const stream = o.stream ?? 'TIDEWAY_LOCKS';
  const config = (ttlMs: number) => ({
    name: stream,
    subjects: [`${stream.toLowerCase()}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    max_age: ttlMs * NS_PER_MS,
    // Publishes carry no message ids; the window only has to fit within max_age.
    duplicate_window: ttlMs * NS_PER_MS,
    deny_delete: false,
    allow_direct: true,
    num_replicas: o.replicas ?? 1,
  });
  /** The stream's lease TTL, creating the stream if it is missing. */
  const ensure = async (): Promise<number> => {
    const info = await bus.jsm.streams
      .info(stream)
      .catch(() => bus.jsm.streams.add(config(o.ttlMs ?? 15_000)))
      // Another process created it meanwhile, maybe with another TTL: take theirs.
      .catch(() => bus.jsm.streams.info(stream));
    return info.config.max_age / NS_PER_MS;
  };
  const ttl = await ensure();
  const subjectOf = (key: string) =>
    `${stream.toLowerCase()}.${createHash('sha256').update(key).digest('base64url')}`;
  const put = async (subject: string, lastSubjectSequence: number) =>
    (await bus.js.publish(subject, o.owner, { expect: { lastSubjectSequence }, timeout: ttl / 3 })).seq;

  /** The lease on `subject` from a write at sequence `first`, sent at `sent`: renewed until released or lost. */
  const leaseOf = (key: string, subject: string, first: number, sent: number): LockLease => {
    const lost = new AbortController();
    let revision = first;
    let validUntil = sent + ttl;
    let renewing: Promise<void> | undefined;
    let lastRenewal = sent;
    const lose = () => {
      clearInterval(timer);
      lost.abort(new LockLostError(`lost the lock of ${key}`));
    };
    // Judged by the clock: a process that stalled may run other callbacks before this timer's,
    // which is why held() (what fence() calls before every mutation) checks it too.
    const expired = () => Date.now() >= validUntil - ttl / 6;
    const timer = setInterval(() => {
      if (expired()) return lose();
      if (renewing || Date.now() - lastRenewal < ttl / 3) return;
      const at = Date.now();
      lastRenewal = at;
      renewing = put(subject, revision).then(
        (r) => {
          revision = r;
          validUntil = at + ttl;
          renewing = undefined;
        },
        // Someone else may hold it now: stop work on this object at once.
        lose,
      );
    }, ttl / 12);
    return {
      token: () => revision,
      lost: lost.signal,
      held: () => {
        if (!lost.signal.aborted && expired()) lose();
        return !lost.signal.aborted;
      },
      release: async () => {
        clearInterval(timer);
        await renewing;
        // Deleting by sequence removes exactly our message: if it was already replaced (we lost
        // the lock) or aged out, there is nothing to delete and nobody else's lock is touched.
        if (!lost.signal.aborted)
          await bus.jsm.streams.deleteMessage(stream, revision, false).catch(() => undefined);
      },
    };
  };

  return {
    tryAcquire: async (key) => {
      const subject = subjectOf(key);
      const sent = Date.now();
      return put(subject, 0).then(
        (revision) => leaseOf(key, subject, revision, sent),
        () => undefined,
      );
    },
    acquire: async (key, { signal }) => {
      const subject = subjectOf(key);
      let lastEnsure = 0;
      for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
        if (signal?.aborted) throw new LockAbortedError(`gave up waiting for the lock of ${key}`);
        const sent = Date.now();
        try {
          return leaseOf(key, subject, await put(subject, 0), sent);
        } catch (error) {
          // Held by someone else: wait. Anything else (the bus away, the stream gone with a wiped
          // server): make sure the stream exists, now and then, and try again.
          const held =
            error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
          if (!held && Date.now() - lastEnsure > 1000) {
            lastEnsure = Date.now();
            await ensure().catch(() => undefined);
          }
          await sleep(delay);
        }
      }
    },
  };
};
