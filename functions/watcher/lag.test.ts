import {
  type ConsumerInfo,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { PARTITIONS } from '../../shared/events/subjects.ts';
import { lagRoutes } from './lag.ts';

type Held = { pending: number; ackPending: number };

/**
 * A JetStreamManager that only answers consumer info (what the route uses of it), from `held`
 * (consumer name → its counts; absent: not found), after `delayMs` if given.
 */
const fakeJsm = (held: Map<string, Held>, o: { delayMs?: number; fail?: () => boolean } = {}) => {
  let calls = 0;
  const jsm = {
    consumers: {
      info: async (_stream: string, name: string) => {
        calls++;
        if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs));
        if (o.fail?.()) throw new Error('timeout');
        const h = held.get(name);
        if (!h)
          throw new JetStreamApiError({
            code: 404,
            err_code: JetStreamApiCodes.ConsumerNotFound,
            description: 'consumer not found',
          });
        return { name, num_pending: h.pending, num_ack_pending: h.ackPending } as ConsumerInfo;
      },
    },
  } as unknown as JetStreamManager;
  return { jsm, calls: () => calls };
};

const partitions = (base: string, pending: number, ackPending: number) =>
  Array.from({ length: PARTITIONS }, (_, p) => [`${base}-p${p}`, { pending, ackPending }] as const);

const get = async (routes: ReturnType<typeof lagRoutes>, consumer: string) => {
  const res = await routes.request(`/lag/${consumer}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('the lag KEDA scales on', () => {
  it("sums a function's partitions, and only its own (not a namespaced set of the same prefix)", async () => {
    const { jsm } = fakeJsm(
      new Map([
        ...partitions('fn-reconcile', 2, 1),
        ...partitions('fn-reconcile-ns-team-a', 100, 100),
        ['fn-reconcile-p12', { pending: 1000, ackPending: 0 }], // not a partition
      ]),
    );
    const routes = lagRoutes(jsm);
    expect((await get(routes, 'fn-reconcile')).body).toEqual({
      consumer: 'fn-reconcile',
      lag: 3 * PARTITIONS,
      pending: 2 * PARTITIONS,
      ackPending: PARTITIONS,
      missing: 0,
    });
    expect((await get(routes, 'fn-reconcile-ns-team-a')).body.lag).toBe(200 * PARTITIONS);
  });

  it('counts a function whose consumers (or stream) are not all there as one waiting event, so it starts', async () => {
    const held = new Map(partitions('fn-reconcile', 0, 0).slice(1));
    const routes = lagRoutes(fakeJsm(held).jsm);
    expect((await get(routes, 'fn-reconcile')).body).toMatchObject({ lag: 1, missing: 1 });
    expect((await get(routes, 'fn-health')).body).toMatchObject({ lag: 1, missing: PARTITIONS });
    const noStream = {
      consumers: {
        info: async () => {
          throw new JetStreamApiError({
            code: 404,
            err_code: JetStreamApiCodes.StreamNotFound,
            description: 'stream not found',
          });
        },
      },
    } as unknown as JetStreamManager;
    expect((await get(lagRoutes(noStream), 'fn-health')).body).toMatchObject({ lag: 1, missing: PARTITIONS });
  });

  it('asks NATS once a second per function, whoever polls, on a clock that never goes back', async () => {
    let now = 0;
    const held = new Map(partitions('fn-reconcile', 1, 0));
    const { jsm, calls } = fakeJsm(held);
    const routes = lagRoutes(jsm, { now: () => now });
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    held.set('fn-reconcile-p0', { pending: 101, ackPending: 0 });
    now = 999;
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    expect(calls()).toBe(PARTITIONS);
    now = 1000;
    // The last answer while the new one is fetched, then the new one.
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    await new Promise((r) => setTimeout(r, 10));
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS + 100);
    expect(calls()).toBe(2 * PARTITIONS);
  });

  it('keeps one fetch at a time per function when NATS is slow, and answers from the last one meanwhile', async () => {
    const { jsm, calls } = fakeJsm(new Map(partitions('fn-reconcile', 1, 0)), { delayMs: 200 });
    let now = 0;
    const routes = lagRoutes(jsm, { now: () => now });
    // The first poll has nothing to fall back on: it waits for the fetch.
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    now = 5000;
    const polls = await Promise.all(Array.from({ length: 20 }, () => get(routes, 'fn-reconcile')));
    expect(polls.every((p) => p.status === 200 && p.body.lag === PARTITIONS)).toBe(true);
    expect(calls()).toBe(2 * PARTITIONS);
  });

  it('says when NATS does not answer, never an empty backlog, and asks again next time', async () => {
    let failing = true;
    const { jsm } = fakeJsm(new Map(partitions('fn-reconcile', 0, 2)), { fail: () => failing });
    const routes = lagRoutes(jsm, { now: () => 0 });
    const failed = await get(routes, 'fn-reconcile');
    expect(failed.status).toBe(503);
    expect(failed.body.error).toMatch(/cannot be read from NATS/);
    failing = false;
    expect((await get(routes, 'fn-reconcile')).body).toMatchObject({ lag: 2 * PARTITIONS, missing: 0 });
  });

  it("refuses a name that is no function's consumer, and another namespace's functions", async () => {
    const routes = lagRoutes(fakeJsm(new Map()).jsm, { namespace: 'team-a' });
    expect((await get(routes, 'a.b')).status).toBe(400);
    expect((await get(routes, 'KV_x')).status).toBe(400);
    expect((await get(routes, 'fn-reconcile')).status).toBe(403);
    expect((await get(routes, 'fn-reconcile-ns-team-b')).status).toBe(403);
    expect((await get(routes, 'fn-reconcile-ns-team-a')).status).toBe(200);
  });
});
