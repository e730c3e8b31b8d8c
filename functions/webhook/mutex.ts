import type { ObjectLocks } from '../../shared/runtime/object-lock.ts';
import { WebhookError } from './errors.ts';

/**
 * One request at a time per key, across every replica. `fence` throws unless the lock is still
 * held: call it right before the write it protects.
 */
export type Mutex = {
  run<T>(key: string, fn: (fence: () => void) => Promise<T>): Promise<T>;
};

/** The runtime's object locks on the bus (shared/runtime/object-lock.ts), waited on for `waitMs`. */
export const busMutex = (locks: ObjectLocks, waitMs = 10_000): Mutex => ({
  run: async (key, fn) => {
    let lease: Awaited<ReturnType<ObjectLocks['acquire']>>;
    try {
      lease = await locks.acquire(key, { signal: AbortSignal.timeout(waitMs) });
    } catch (error) {
      throw new WebhookError(
        'Unavailable',
        'another request for this cluster is still being handled; retry',
        {
          retryAfter: 1,
          cause: error,
        },
      );
    }
    try {
      return await fn(() => {
        if (!lease.held())
          throw new WebhookError('Unavailable', 'lost the lock while handling the request; retry', {
            retryAfter: 1,
          });
      });
    } finally {
      await lease.release();
    }
  },
});

/** In one process only: for tests of the app without a bus. */
export const localMutex = (): Mutex => {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run: async (key, fn) => {
      const before = tails.get(key) ?? Promise.resolve();
      const mine = before.then(
        () => fn(() => undefined),
        () => fn(() => undefined),
      );
      const tail = mine.catch(() => undefined);
      tails.set(key, tail);
      try {
        return await mine;
      } finally {
        if (tails.get(key) === tail) tails.delete(key);
      }
    },
  };
};
