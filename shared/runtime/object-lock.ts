import { createHash } from 'node:crypto';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';

/** Held while a handler works on an object; `lost` aborts when another holder could have it. */
export type LockLease = {
  /** Fencing token: grows with every renewal, so a stale holder's writes can be told apart. */
  readonly token: () => number;
  readonly lost: AbortSignal;
  release(): Promise<void>;
};

export type ObjectLocks = {
  /** Waits until the lock is free; `onWait` runs every few seconds while waiting (heartbeat). */
  acquire(key: string, o: { signal?: AbortSignal; onWait?: () => void }): Promise<LockLease>;
};

export class LockAbortedError extends Error {
  override readonly name = 'LockAbortedError';
  readonly retry = true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Object locks across all replicas of a function, in a JetStream KV bucket whose max age is the
 * lease TTL: a holder renews (compare-and-set on the revision) every TTL/3, so a crashed holder's
 * entry ages out and the next replica takes over. Keys are hashed: KV keys allow few characters.
 */
export const kvObjectLocks = async (
  nc: NatsConnection,
  o: { bucket?: string; owner: string; ttlMs?: number },
): Promise<ObjectLocks> => {
  const ttlMs = o.ttlMs ?? 15_000;
  const kv: KV = await new Kvm(nc).create(o.bucket ?? 'tideway-locks', { ttl: ttlMs, history: 1 });
  const kvKey = (key: string) => createHash('sha256').update(key).digest('base64url');

  return {
    acquire: async (key, { signal, onWait }) => {
      const k = kvKey(key);
      let lastBeat = Date.now();
      let revision = 0;
      for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
        if (signal?.aborted) throw new LockAbortedError(`gave up waiting for the lock of ${key}`);
        try {
          revision = await kv.create(k, o.owner);
          break;
        } catch {
          // Held by someone else (or the bus is away): wait and try again.
          if (Date.now() - lastBeat > 2000) {
            onWait?.();
            lastBeat = Date.now();
          }
          await sleep(delay);
        }
      }
      const lost = new AbortController();
      let renewing = Promise.resolve();
      const timer = setInterval(() => {
        renewing = kv.update(k, o.owner, revision).then(
          (r) => {
            revision = r;
          },
          () => {
            // Someone else may hold it now: stop work on this object at once.
            clearInterval(timer);
            lost.abort(new LockAbortedError(`lost the lock of ${key}`));
          },
        );
      }, ttlMs / 3);
      return {
        token: () => revision,
        lost: lost.signal,
        release: async () => {
          clearInterval(timer);
          await renewing;
          if (!lost.signal.aborted) await kv.delete(k, { previousSeq: revision }).catch(() => undefined);
        },
      };
    },
  };
};
