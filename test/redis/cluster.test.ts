import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus } from '../../shared/bus/connect.ts';
import { fromMessage } from '../../shared/events/nats-binding.ts';
import { STREAM, subjectFor } from '../../shared/events/subjects.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { connectRedis } from '../../shared/redis/client.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventReasons,
  ipOf,
  redisAt,
  redisClusters,
  refusals,
  startRedisFunctions,
} from '../support/redis.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;

/**
 * RedisClusters end to end with the product's own functions (serverless.yml), two replicas of
 * each, on the test bed: real StatefulSet controller, real pods running redis-server, real
 * Services through kube-proxy.
 */
describe('redis cluster', () => {
  const b = bed();
  let ns = '';
  const workers: Worker[] = [];

  const rdc = redisClusters(b, () => ns);
  const { get, apply, pods, password } = rdc;
  const readyCluster = rdc.ready;

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis');
    workers.push(...(await startRedisFunctions(b, ns, 'redis-test')));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    // Least privilege is enough: no function was refused anything along the way.
    expect(refusals(workers)).toEqual([]);
  });

  it('makes a 3-instance cluster Ready; writes on the master reach both replicas', async () => {
    await apply('cache', { version: '7.0', replicas: 3 });
    const rc = await readyCluster('cache');
    expect(rc.status).toMatchObject({ replicas: 3, readyReplicas: 3, ready: '3/3', master: 'cache-0' });
    expect(rc.status?.version).toMatch(/^7\.0\./);
    expect(findCondition(rc.status?.conditions as never, 'Reconciled')).toMatchObject({ status: 'True' });
    const ps = await pods('cache');
    expect(ps.map((p) => p.metadata?.labels?.['tideway.dev/role'])).toEqual(['master', 'replica', 'replica']);

    const pw = await password('cache');
    const master = await redisAt(ipOf(ps[0]), pw);
    try {
      for (let i = 0; i < 100; i++) await master.command('SET', `k${i}`, `v${i}`);
      expect(await master.command('WAIT', 2, 5000)).toBe(2);
    } finally {
      master.close();
    }
    for (const p of ps.slice(1)) {
      const r = await redisAt(ipOf(p), pw);
      try {
        expect(await r.command('GET', 'k99')).toBe('v99');
        await expect(r.command('SET', 'x', '1')).rejects.toThrow(/READONLY/);
      } finally {
        r.close();
      }
    }
    // The printer columns tell the same story.
    const table = await b.kubectl('get', 'rdc', '-n', ns, 'cache', '--no-headers');
    expect(table).toMatch(/^cache\s+7\.0\.\d+\s+3\/3\s+cache-0\s+Ready\s+/);
  });

  it('routes the master Service to the master and the replicas Service to replicas', async () => {
    const svc = await b.core.readNamespacedService({ namespace: ns, name: 'cache' });
    const pw = await password('cache');
    const viaService = await redisAt(svc.spec?.clusterIP ?? '', pw);
    try {
      expect(await viaService.command('SET', 'via', 'service')).toBe('OK');
      expect(String(await viaService.command('ROLE'))).toMatch(/^master/);
    } finally {
      viaService.close();
    }
  });

  it('undoes drift: a deleted Service comes back, an edited StatefulSet is set back', async () => {
    await b.core.deleteNamespacedService({ namespace: ns, name: 'cache-replicas' });
    await b.apps.patchNamespacedStatefulSetScale({
      namespace: ns,
      name: 'cache',
      body: [{ op: 'replace', path: '/spec/replicas', value: 1 }],
    });
    await until(
      'the Service is back',
      () =>
        b.core.readNamespacedService({ namespace: ns, name: 'cache-replicas' }).then(
          () => true,
          () => undefined,
        ),
      60_000,
      500,
    );
    await until(
      'the StatefulSet has 3 replicas again',
      async () =>
        (await b.apps.readNamespacedStatefulSet({ namespace: ns, name: 'cache' })).spec?.replicas === 3
          ? true
          : undefined,
      60_000,
      500,
    );
    await readyCluster('cache');
  });

  it('refuses a bad config edit without touching what runs', async () => {
    // The CRD's CEL rule refuses owned directives outright...
    await expect(apply('cache', { version: '7.0', replicas: 3, config: { port: '7000' } })).rejects.toThrow(
      /directives Tideway owns/,
    );
    // ...and an unknown image shows up as a reason on the object instead of a silent Pending.
    await apply('broken', { image: 'example.com/no-such-image:1', replicas: 1 });
    const rc = await until(
      'a reason for the broken cluster',
      async () => {
        const c = findCondition((await get('broken')).status?.conditions as never, 'Ready');
        return c && /Image|Container/.test(c.reason) ? c : undefined;
      },
      90_000,
      500,
    );
    expect(rc.message).toContain('broken-0');
    // The full status on failure says which instance is not playing its part.
    expect((await get('cache')).status).toMatchObject({ phase: 'Ready' });
  });

  it('fails over when the master is held down: no acknowledged write lost, the old master rejoins as a replica', async () => {
    const pw = await password('cache');
    const before = await readyCluster('cache');
    const oldMaster = before.status?.master ?? '';
    const ps = await pods('cache');
    const oldIp = ipOf(ps.find((p) => p.metadata?.name === oldMaster));
    // Writes acknowledged by a replica (WAIT 1) right up to the fault.
    const acked: string[] = [];
    const m = await redisAt(oldIp, pw);
    try {
      for (let i = 0; i < 300; i++) {
        await m.command('SET', `fo${i}`, `v${i}`);
        if (Number(await m.command('WAIT', 1, 1000)) >= 1) acked.push(`fo${i}`);
      }
    } finally {
      m.close();
    }
    expect(acked.length).toBe(300);

    const svc = await b.core.readNamespacedService({ namespace: ns, name: 'cache' });
    const downAt = performance.now();
    await b.faults.holdDownPod(ns, oldMaster);
    // Writes through the master Service, until one is accepted by a master that is not the old one.
    await until(
      'writes accepted through the master Service',
      async () => {
        const c = await connectRedis({
          host: svc.spec?.clusterIP ?? '',
          port: 6379,
          password: pw,
          connectTimeoutMs: 300,
          commandTimeoutMs: 300,
        }).catch(() => undefined);
        if (!c) return undefined;
        try {
          return (await c.command('SET', 'after-failover', '1')) === 'OK' ? true : undefined;
        } catch {
          return undefined;
        } finally {
          c.close();
        }
      },
      60_000,
      100,
    ).catch(async (error) => {
      // Say why: the Healthy condition names the refused candidates.
      const h = findCondition((await get('cache')).status?.conditions as never, 'Healthy');
      throw new Error(`${String(error)}; Healthy: ${h?.reason}: ${h?.message}`);
    });
    const failoverMs = performance.now() - downAt;
    process.stdout.write(
      `[redis] failover: master down → writes accepted in ${(failoverMs / 1000).toFixed(2)} s\n`,
    );

    const rc = await get('cache');
    const newMaster = rc.status?.master ?? '';
    expect(newMaster).not.toBe(oldMaster);
    expect(rc.status?.failover?.last).toMatchObject({
      from: oldMaster,
      to: newMaster,
      reason: 'MasterUnreachable',
    });
    const nip = ipOf((await pods('cache')).find((p) => p.metadata?.name === newMaster));
    const n = await redisAt(nip, pw);
    try {
      const values = (await n.command('MGET', ...acked)) as (string | null)[];
      expect(values.filter((v) => v === null)).toEqual([]);
    } finally {
      n.close();
    }
    // Recorded: a Kubernetes Event and a CloudEvent on the bus.
    await expect.poll(() => eventReasons(b, ns, 'cache'), EVENTS_RECORDED).toContain('Failover');
    const bus = await connectBus(b.info.natsUrl, 'test-failover');
    try {
      const msg = await bus.jsm.streams.getMessage(STREAM, {
        last_by_subj: subjectFor('dev.tideway.cluster.failover', {
          kind: 'RedisCluster',
          namespace: ns,
          name: 'cache',
        }),
      });
      const ce = fromMessage(msg?.header, msg?.data ?? new Uint8Array());
      expect(ce.data).toMatchObject({ from: oldMaster, to: newMaster });
    } finally {
      await bus.close();
    }

    // The old master comes back fenced and rejoins as a replica of the new one, with the data.
    await b.faults.releasePod(ns, oldMaster);
    const healed = await readyCluster('cache');
    expect(healed.status?.master).toBe(newMaster);
    const o = await redisAt(oldIp, pw);
    try {
      expect(String(await o.command('ROLE'))).toMatch(/^slave/);
      await until(
        'the old master has the new writes',
        async () => ((await o.command('GET', 'after-failover')) === '1' ? true : undefined),
        30_000,
        200,
      );
      await expect(o.command('SET', 'x', '1')).rejects.toThrow(/READONLY/);
    } finally {
      o.close();
    }
    const labels = Object.fromEntries(
      (await pods('cache')).map((p) => [p.metadata?.name, p.metadata?.labels?.['tideway.dev/role']]),
    );
    expect(labels[newMaster]).toBe('master');
    expect(labels[oldMaster]).toBe('replica');
    await until(
      'Healthy again',
      async () =>
        findCondition((await get('cache')).status?.conditions as never, 'Healthy')?.status === 'True'
          ? true
          : undefined,
      30_000,
      500,
    );
  });

  it('deletes what it owns with the cluster, leaving no process behind', async () => {
    await b.custom.deleteNamespacedCustomObject({ ...RDC, namespace: ns, name: 'broken' });
    const before = (await pods('cache')).map((p) => p.metadata?.uid);
    expect(before).toHaveLength(3);
    await b.custom.deleteNamespacedCustomObject({ ...RDC, namespace: ns, name: 'cache' });
    await until(
      'the cluster is gone',
      () =>
        get('cache').then(
          () => undefined,
          () => true,
        ),
      120_000,
      500,
    );
    // The finalizer held the object until the last pod was gone.
    expect(await pods('cache')).toEqual([]);
    await until(
      'owned Services collected',
      async () =>
        (await b.core.listNamespacedService({ namespace: ns })).items.some((s) =>
          s.metadata?.name?.startsWith('cache'),
        )
          ? undefined
          : true,
      60_000,
      500,
    );
  });
});
