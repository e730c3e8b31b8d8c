import { describe, expect, it, vi } from 'vitest';
import { done, LockLostError, retryAfter, TemporaryError, terminal } from './handler.ts';
import { onBehalf } from './on-behalf.ts';

const ctx = (attempt: number) => ({ attempt, maxAttempts: 10, log: { warn: vi.fn() } as never });
const failing = (error: unknown) => () => Promise.reject(error);
const notRetryable = Object.assign(new Error('state unreadable'), {
  retry: false,
  reason: 'StateUnreadable',
});

describe('onBehalf', () => {
  it('never ends terminal: the runtime would report it on the event’s object', async () => {
    expect(await onBehalf(ctx(1), 'x', async () => terminal('InvalidSpec', 'bad'))).toBe(done);
    expect(await onBehalf(ctx(1), 'x', failing(notRetryable))).toBe(done);
  });

  it('retries a failure that may pass a few times, then leaves it', async () => {
    expect((await onBehalf(ctx(1), 'x', failing(new TemporaryError('Busy', 'busy')))).kind).toBe('retry');
    expect((await onBehalf(ctx(2), 'x', failing(new Error('socket hang up')))).kind).toBe('retry');
    expect(await onBehalf(ctx(3), 'x', failing(new Error('socket hang up')))).toBe(done);
  });

  it('retries a lost lock whatever the attempt, short of the runtime’s limit; a timeout counts as a failure', async () => {
    expect((await onBehalf(ctx(5), 'x', failing(new LockLostError('lost')))).kind).toBe('retry');
    expect(await onBehalf(ctx(9), 'x', failing(new LockLostError('lost')))).toBe(done);
    // The run's signal aborted (its timeout): three attempts, as for any failure, not hours of them.
    expect((await onBehalf(ctx(2), 'x', failing(new Error('This operation was aborted')))).kind).toBe(
      'retry',
    );
    expect(await onBehalf(ctx(3), 'x', failing(new Error('This operation was aborted')))).toBe(done);
  });

  it('keeps the retries the run asks for until the last attempt but one', async () => {
    expect(await onBehalf(ctx(8), 'x', async () => retryAfter(2000, 'wait'))).toEqual(
      retryAfter(2000, 'wait'),
    );
    expect(await onBehalf(ctx(9), 'x', async () => retryAfter(2000, 'wait'))).toBe(done);
    expect(await onBehalf(ctx(1), 'x', async () => done)).toBe(done);
  });
});
