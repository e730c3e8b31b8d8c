import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { redisAt, redisClusters, refusals, startFunction } from '../support/redis.ts';
import { etcdClusters } from './support.ts';

/**
 * Issue 15: a Redis and an etcd cluster with the same name in one namespace both work — their
 * objects do not collide, and a change of one engine's pod reaches only its own cluster's function.
 */
describe('a RedisCluster and an EtcdCluster of the same name', () => {
  const b = bed();
  let ns = '';
  const workers: Worker[] = [];
  const etcd = etcdClusters(b, () => ns);
  const redis = redisClusters(b, () => ns);

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'same-name');
    const id = `same-name-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    for (const fn of ['reconcile', 'health', 'etcd-reconcile'])
      workers.push(await startFunction(b, ns, id, fn, { TIDEWAY_REPLICA: '0' }));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    expect(refusals(workers)).toEqual([]);
  });

  it('both become Ready and serve, each through its own objects', async () => {
    await redis.apply('main', { version: '7.0', replicas: 1 });
    await etcd.apply('main', { size: 1 });
    const [rc] = await Promise.all([redis.ready('main'), etcd.ready('main', 1)]);
    const conditions = (rc.status?.conditions ?? []) as { type: string; status: string }[];
    expect(conditions.find((c) => c.type === 'Reconciled')?.status).toBe('True');

    const redisPods = (await redis.pods('main')).filter(
      (p) => p.metadata?.labels?.['app.kubernetes.io/name'] === 'redis',
    );
    expect(redisPods.map((p) => p.metadata?.name)).toEqual(['main-0']);
    expect((await etcd.pods('main')).map((p) => p.metadata?.name)).toEqual(['main-etcd-0']);
    const services = (await b.core.listNamespacedService({ namespace: ns })).items
      .map((s) => s.metadata?.name)
      .sort();
    expect(services).toEqual(['main', 'main-etcd', 'main-etcd-peers', 'main-headless', 'main-replicas']);

    const r = await redisAt(redisPods[0]?.status?.podIP ?? '', await redis.password('main'));
    try {
      await r.command('SET', 'engine', 'redis');
      expect(await r.command('GET', 'engine')).toBe('redis');
    } finally {
      r.close();
    }
    const e = await etcd.client('main');
    try {
      await e.put('engine', 'etcd');
      expect((await e.get('engine'))?.value.toString()).toBe('etcd');
    } finally {
      e.close();
    }
  });
});
