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
import type { NatsConnection } from '@nats-io/nats-core';
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
  /** Waits until the lock is free (or `signal` aborts); a holder that only keeps it is asked for it. */
  acquire(key: string, o: { signal?: AbortSignal }): Promise<LockLease>;
  /**
   * One attempt, one round trip (none for a lock this process kept): the lease if the lock was
   * free, undefined if someone else holds it (or the bus did not answer). A holder that only
   * keeps it is asked to give it back, so an `acquire` right after gets it soon.
   */
  tryAcquire(key: string): Promise<LockLease | undefined>;
  /** Gives back every kept lock: on shutdown, so that nobody waits for them to age out. */
  close(): Promise<void>;
};

export class LockAbortedError extends Error {
  override readonly name = 'LockAbortedError';
  readonly retry = true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NS_PER_MS = 1_000_000;
/** How long a lock someone else asked for is not kept after runs here. */
const CONTENDED_MS = 60_000;
/** How long close() may take to give kept locks back. */
const CLOSE_WITHIN_MS = 2000;

/**
 * Object locks across all replicas of a function, one subject per object in a stream of their
 * own that keeps one message per subject for at most the lease TTL. Taking a lock is publishing
 * on its subject expecting no message there; renewing (every TTL/3) is publishing expecting the
 * holder's own last one, so a crashed holder's message ages out and the next replica takes over.
 * Releasing deletes the holder's message by sequence rather than writing a tombstone (what a KV
 * delete does): the next acquisition is then one round trip, not three. Subjects are hashed keys.
 *
 * With `keepMs`, a released lock is kept (and renewed) for that long instead: the next run on
 * the same object in this process takes it with no round trip at all, which is the common case
 * once events are partitioned by object. A kept lock is given back at once when someone else
 * asks for it: a taker that finds a lock held says so on a plain NATS subject, and the keeper
 * deletes its message if no run uses it, or when the run ends, and keeps that lock no more for a
 * minute (its events go elsewhere too). A kept lock costs a renewal every TTL/3 and, if its
 * process dies without `close()`, a wait of up to the TTL for the next taker.
 *
 * The TTL is the stream's: the first process creates it with `ttlMs`, later ones adopt its
 * max_age (rewriting it would expire other holders' leases early). A holder counts its lease from
 * when it sent the last acknowledged write, and declares it lost a margin before that runs out
 * even if no renewal could be sent (a stalled process, a hung connection).
 */
export const objectLocks = async (
  bus: { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager },
  o: {
    stream?: string;
    owner: string;
    ttlMs?: number;
    replicas?: number;
    /** How long a released lock is kept for a next run here; 0 gives it back at once. */
    keepMs?: number;
    /** At most this many kept locks (each costs renewals); the oldest goes first. */
    maxKept?: number;
  },
): Promise<ObjectLocks> => {
  const stream = o.stream ?? 'TIDEWAY_LOCKS';
  const keepMs = o.keepMs ?? 0;
  const maxKept = o.maxKept ?? 256;
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
  const hashOf = (key: string) => createHash('sha256').update(key).digest('base64url');
  const subjectOf = (hash: string) => `${stream.toLowerCase()}.${hash}`;
  // Outside the stream's subjects: asking is not stored.
  const wantSubject = (hash: string) => `${stream.toLowerCase()}_want.${hash}`;
  const put = async (subject: string, lastSubjectSequence: number) =>
    (await bus.js.publish(subject, o.owner, { expect: { lastSubjectSequence }, timeout: ttl / 3 })).seq;

  /** A lock this process holds: renewed until freed or lost. */
  type Hold = {
    hash: string;
    token(): number;
    lost: AbortSignal;
    /** Ours by the clock now; `margin` more of it left. */
    held(margin?: number): boolean;
    free(): Promise<void>;
  };

  /** The hold on `hash` from a write at sequence `first`, sent at `sent`. */
  const holdOf = (key: string, hash: string, first: number, sent: number): Hold => {
    const subject = subjectOf(hash);
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
    const expired = (margin = 0) => Date.now() >= validUntil - ttl / 6 - margin;
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
      hash,
      token: () => revision,
      lost: lost.signal,
      held: (margin = 0) => {
        if (!lost.signal.aborted && expired()) lose();
        return !lost.signal.aborted && !expired(margin);
      },
      free: async () => {
        clearInterval(timer);
        await renewing;
        // Deleting by sequence removes exactly our message: if it was already replaced (we lost
        // the lock) or aged out, there is nothing to delete and nobody else's lock is touched.
        if (!lost.signal.aborted)
          await bus.jsm.streams.deleteMessage(stream, revision, false).catch(() => undefined);
      },
    };
  };

  /** Locks kept after their run, by hash, oldest first; and those a run here uses now. */
  const kept = new Map<string, { hold: Hold; timer: NodeJS.Timeout }>();
  const inUse = new Map<string, { wanted: boolean }>();
  // Locks someone else asked for lately are not kept: their object's events reach other
  // processes too (reconcile and health of one cluster; replicas while partitions move), and
  // keeping would make each of those ask first. Only an object that stays with this process is worth keeping.
  const contended = new Map<string, number>();
  const contend = (hash: string) => {
    contended.delete(hash);
    contended.set(hash, Date.now() + CONTENDED_MS);
    const oldest = contended.size > maxKept * 4 ? contended.keys().next().value : undefined;
    if (oldest !== undefined) contended.delete(oldest);
  };
  const isContended = (hash: string) => {
    const until = contended.get(hash);
    if (until !== undefined && until <= Date.now()) contended.delete(hash);
    return until !== undefined && until > Date.now();
  };
  let closed = false;
  const giveBack = async (hash: string) => {
    const k = kept.get(hash);
    if (!k) return;
    kept.delete(hash);
    clearTimeout(k.timer);
    await k.hold.free();
  };
  const keep = (hold: Hold) => {
    const oldest = kept.size >= maxKept ? kept.keys().next().value : undefined;
    if (oldest !== undefined) void giveBack(oldest);
    const timer = setTimeout(() => void giveBack(hold.hash), keepMs);
    timer.unref();
    kept.set(hold.hash, { hold, timer });
  };
  // Someone else waits for a lock: a kept one goes back now, one in use when its run ends.
  const asked =
    keepMs > 0
      ? bus.nc.subscribe(`${stream.toLowerCase()}_want.*`, {
          callback: (error, msg) => {
            if (error) return;
            const hash = msg.subject.slice(msg.subject.indexOf('.') + 1);
            contend(hash);
            const use = inUse.get(hash);
            if (use) use.wanted = true;
            else void giveBack(hash);
          },
        })
      : undefined;

  /** The caller's lease on a hold: released, it is kept for the next run or given back. */
  const lend = (hold: Hold): LockLease => {
    const use = { wanted: false };
    inUse.set(hold.hash, use);
    let returned = false;
    // A signal per run: runs combine it with theirs, and a kept lock outlives many runs.
    const lost = new AbortController();
    const onLost = () => lost.abort(hold.lost.reason);
    if (hold.lost.aborted) onLost();
    else hold.lost.addEventListener('abort', onLost, { once: true });
    return {
      token: hold.token,
      lost: lost.signal,
      held: () => !returned && hold.held(),
      release: async () => {
        if (returned) return;
        returned = true;
        hold.lost.removeEventListener('abort', onLost);
        inUse.delete(hold.hash);
        // A kept lock must be good for a whole next run's start: at least half its TTL left.
        if (use.wanted || keepMs <= 0 || closed || isContended(hold.hash) || !hold.held(ttl / 3))
          return hold.free();
        keep(hold);
      },
    };
  };

  /** One attempt: a kept lock, or a write expecting none; undefined when held (and asked for). */
  const attempt = async (key: string): Promise<LockLease | undefined> => {
    const hash = hashOf(key);
    // A run here has it: the keyed scheduler's caller waits for it like for anyone's.
    if (inUse.has(hash)) return undefined;
    const k = kept.get(hash);
    if (k) {
      kept.delete(hash);
      clearTimeout(k.timer);
      if (k.hold.held(ttl / 3)) return lend(k.hold);
      await k.hold.free();
    }
    const sent = Date.now();
    try {
      return lend(holdOf(key, hash, await put(subjectOf(hash), 0), sent));
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) {
        bus.nc.publish(wantSubject(hash));
        return undefined;
      }
      throw error;
    }
  };

  return {
    tryAcquire: (key) => attempt(key).catch(() => undefined),
    acquire: async (key, { signal }) => {
      let lastEnsure = 0;
      // Short first: a lock that was only kept comes back within a round trip of asking.
      for (let delay = 5; ; delay = Math.min(delay * 2, 250)) {
        if (signal?.aborted) throw new LockAbortedError(`gave up waiting for the lock of ${key}`);
        try {
          const lease = await attempt(key);
          if (lease) return lease;
        } catch {
          // The bus away, the stream gone with a wiped server: make sure the stream exists, now
          // and then, and try again.
          if (Date.now() - lastEnsure > 1000) {
            lastEnsure = Date.now();
            await ensure().catch(() => undefined);
          }
        }
        await sleep(delay);
      }
    },
    close: async () => {
      closed = true;
      asked?.unsubscribe();
      // Bounded: with the bus gone the deletes would wait for their timeouts, and a stopping
      // process must not; what is not given back ages out.
      const bound = new Promise((r) => setTimeout(r, CLOSE_WITHIN_MS).unref());
      await Promise.race([Promise.all([...kept.keys()].map(giveBack)), bound]);
    },
  };
};
