import { describe, expect, it } from 'vitest';
import { backoffMs } from './backoff.ts';
import { type Job, keyedScheduler } from './keyed-scheduler.ts';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
};

const job = (key: string, log: string[], gate?: Promise<void>, coalesce = 'resource'): Job => ({
  key,
  coalesce,
  run: async () => {
    log.push(`start ${key}`);
    await gate;
    log.push(`end ${key}`);
  },
  superseded: () => log.push(`superseded ${key}`),
});

describe('keyedScheduler', () => {
  it('runs one job per key at a time, different keys in parallel', async () => {
    const s = keyedScheduler(4);
    const log: string[] = [];
    const a = deferred();
    s.submit(job('a', log, a.promise));
    s.submit(job('b', log));
    s.submit(job('a', log, undefined, 'tick'));
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['start a', 'start b', 'end b']);
    a.resolve();
    await s.idle();
    expect(log).toEqual(['start a', 'start b', 'end b', 'end a', 'start a', 'end a']);
  });

  it('coalesces waiting jobs of the same class and tells the superseded one', async () => {
    const s = keyedScheduler(1);
    const log: string[] = [];
    const a = deferred();
    s.submit(job('a', log, a.promise));
    s.submit(job('a', log));
    s.submit(job('a', log));
    expect(log).toEqual(['start a', 'superseded a']);
    a.resolve();
    await s.idle();
    expect(log.filter((l) => l === 'start a')).toHaveLength(2);
  });

  it('does not let a busy key take a slot from other keys', async () => {
    const s = keyedScheduler(2);
    const log: string[] = [];
    const stuck = deferred();
    s.submit(job('poison', log, stuck.promise));
    for (let i = 0; i < 5; i++) s.submit(job('poison', log, undefined, `c${i}`));
    s.submit(job('x', log));
    s.submit(job('y', log));
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toContain('end x');
    expect(log).toContain('end y');
    stuck.resolve();
    await s.idle();
  });

  it('never exceeds the concurrency limit', async () => {
    const s = keyedScheduler(3);
    let now = 0;
    let max = 0;
    for (let i = 0; i < 20; i++) {
      s.submit({
        key: `k${i}`,
        coalesce: 'r',
        run: async () => {
          now++;
          max = Math.max(max, now);
          await new Promise((r) => setTimeout(r, 2));
          now--;
        },
        superseded: () => undefined,
      });
    }
    await s.idle();
    expect(max).toBe(3);
  });
  it('lets a job wait outside its slot: other keys run meanwhile, its own key stays closed', async () => {
    const s = keyedScheduler(1);
    const log: string[] = [];
    const lock = deferred();
    s.submit({
      key: 'a',
      coalesce: 'r',
      run: async (slot) => {
        log.push('start a');
        await slot.outside(() => lock.promise); // another replica holds a's lock
        log.push('a has its lock');
        await new Promise((r) => setTimeout(r, 5));
        log.push('end a');
      },
      superseded: () => undefined,
    });
    s.submit(job('a', log, undefined, 'tick'));
    s.submit(job('b', log));
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['start a', 'start b', 'end b']);
    lock.resolve();
    await s.idle();
    expect(log).toEqual(['start a', 'start b', 'end b', 'a has its lock', 'end a', 'start a', 'end a']);
  });

  it('gives a job back from outside its slot the next free slot, never exceeding the limit', async () => {
    const s = keyedScheduler(2);
    let now = 0;
    let max = 0;
    const order: string[] = [];
    const work = async (name: string) => {
      now++;
      max = Math.max(max, now);
      order.push(name);
      await new Promise((r) => setTimeout(r, 5));
      now--;
    };
    const lock = deferred();
    s.submit({
      key: 'waiter',
      coalesce: 'r',
      run: async (slot) => {
        await slot.outside(() => lock.promise);
        await work('waiter');
      },
      superseded: () => undefined,
    });
    for (let i = 0; i < 3; i++)
      s.submit({ key: `k${i}`, coalesce: 'r', run: () => work(`k${i}`), superseded: () => undefined });
    await new Promise((r) => setTimeout(r, 1));
    lock.resolve();
    for (let i = 3; i < 8; i++)
      s.submit({ key: `k${i}`, coalesce: 'r', run: () => work(`k${i}`), superseded: () => undefined });
    await s.idle();
    expect(max).toBe(2);
    // Back from its wait, it runs before the jobs that had not started yet.
    expect(order.slice(0, 4)).toEqual(['k0', 'k1', 'waiter', 'k2']);
    expect(s.size()).toBe(0);
  });
});

describe('backoffMs', () => {
  it('doubles per attempt up to the cap, jittered into the upper half', () => {
    expect(backoffMs(1, 1000, 60_000, () => 0)).toBe(500);
    expect(backoffMs(1, 1000, 60_000, () => 1)).toBe(1000);
    expect(backoffMs(4, 1000, 60_000, () => 1)).toBe(8000);
    expect(backoffMs(20, 1000, 60_000, () => 1)).toBe(60_000);
  });
});
