import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { PARTITIONS } from '../../shared/events/subjects.ts';
import { partitionConsumers } from '../../shared/runtime/durables.ts';
import { lagRoutes } from './lag.ts';

const info = (name: string, pending: number, ackPending: number) =>
  ({ name, num_pending: pending, num_ack_pending: ackPending }) as ConsumerInfo;

/** A JetStreamManager that only lists consumers: what the route uses of it. */
const fakeJsm = (lists: (() => ConsumerInfo[])[]) => {
  let calls = 0;
  const jsm = {
    consumers: {
      list: () => {
        const next = lists[Math.min(calls++, lists.length - 1)]!;
        return (async function* () {
          yield* next();
        })();
      },
    },
  } as unknown as JetStreamManager;
  return { jsm, calls: () => calls };
};

const all = (fn: string, ns: string | undefined, pending: number, ackPending: number) =>
  partitionConsumers(fn, ns).map((n) => info(n, pending, ackPending));

const get = async (routes: ReturnType<typeof lagRoutes>, consumer: string) => {
  const res = await routes.request(`/lag/${consumer}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('the lag KEDA scales on', () => {
  it("sums a function's partitions, and only its own (not a namespaced one's of the same prefix)", async () => {
    const { jsm } = fakeJsm([
      () => [
        ...all('reconcile', undefined, 2, 1),
        ...all('reconcile', 'team-a', 100, 100),
        ...all('health', undefined, 7, 7),
        info('fn-reconcile-p12', 1000, 0), // not a partition
      ],
    ]);
    const { status, body } = await get(lagRoutes(jsm), 'fn-reconcile');
    expect(status).toBe(200);
    expect(body).toEqual({
      consumer: 'fn-reconcile',
      lag: 3 * PARTITIONS,
      pending: 2 * PARTITIONS,
      ackPending: PARTITIONS,
      missing: 0,
    });
    expect((await get(lagRoutes(jsm), 'fn-reconcile-ns-team-a')).body.lag).toBe(200 * PARTITIONS);
  });

  it('counts a function whose consumers are not all there as one waiting event, so it starts', async () => {
    const { jsm } = fakeJsm([() => all('reconcile', undefined, 0, 0).slice(1), () => []]);
    const routes = lagRoutes(
      jsm,
      (() => {
        let t = 0;
        return () => (t += 5000);
      })(),
    );
    expect((await get(routes, 'fn-reconcile')).body).toMatchObject({ lag: 1, missing: 1 });
    expect((await get(routes, 'fn-reconcile')).body).toMatchObject({ lag: 1, missing: PARTITIONS });
  });

  it('lists once a second for every function that asks', async () => {
    let now = 0;
    const { jsm, calls } = fakeJsm([
      () => all('reconcile', undefined, 1, 0),
      () => all('reconcile', undefined, 5, 0),
    ]);
    const routes = lagRoutes(jsm, () => now);
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    now = 999;
    expect((await get(routes, 'fn-health')).body.missing).toBe(PARTITIONS);
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(PARTITIONS);
    expect(calls()).toBe(1);
    now = 1000;
    expect((await get(routes, 'fn-reconcile')).body.lag).toBe(5 * PARTITIONS);
    expect(calls()).toBe(2);
  });

  it('refuses a name that is no consumer, and says when NATS does not answer (and asks again next time)', async () => {
    const { jsm, calls } = fakeJsm([
      () => {
        throw new Error('timeout');
      },
      () => all('reconcile', undefined, 0, 0),
    ]);
    const routes = lagRoutes(jsm, () => 0);
    expect((await get(routes, 'a.b')).status).toBe(400);
    const failed = await get(routes, 'fn-reconcile');
    expect(failed.status).toBe(503);
    expect(failed.body.error).toMatch(/cannot be listed: timeout/);
    expect((await get(routes, 'fn-reconcile')).body).toMatchObject({ lag: 0, missing: 0 });
    expect(calls()).toBe(2);
  });
});
