import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseInfo, parseReplication } from '../../shared/redis/info.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  ipOf,
  missingKeys,
  redisAt,
  redisClusters,
  refusals,
  startRedisFunctions,
} from '../support/redis.ts';

type Cond = { type: string; status: string; reason: string; message: string };

/**
 * A failover acts only on what it judged: a target that restarted between the probe and the
 * promotion is not promoted, and a master the API server will not take off the master Service
 * is not replaced. Each test fails on the code before its fix.
 */
describe('redis failover fencing', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const condition = async (name: string, type: string) =>
    ((await rdc.get(name)).status?.conditions as Cond[] | undefined)?.find((c) => c.type === type);
  const info = async (ip: string, pw: string) => {
    const c = await redisAt(ip, pw);
    try {
      return parseInfo(String(await c.command('INFO')));
    } finally {
      c.close();
    }
  };
  const podIp = async (name: string, pod: string) =>
    ipOf((await rdc.pods(name)).find((p) => p.metadata?.name === pod));
  /** Keys on the master, acknowledged by every replica (WAIT), saved to disk on the master only. */
  const writeKeys = async (name: string, pw: string, n: number) => {
    const rc = await rdc.get(name);
    const keys = Array.from({ length: n }, (_, i) => `k${i}`);
    const m = await redisAt(await podIp(name, rc.status?.master ?? ''), pw);
    try {
      for (const k of keys) await m.command('SET', k, k);
      const replicas = (rc.spec.replicas ?? 3) - 1;
      expect(Number(await m.command('WAIT', replicas, 5000))).toBe(replicas);
      await m.command('SAVE');
    } finally {
      m.close();
    }
    return keys;
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis-fencing');
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('does not promote a replica that restarted between the probe and the promotion; the record goes back and no key is lost', async () => {
    // The health replica pauses right before REPLICAOF NO ONE (the record already names the
    // target), short of its lease: long enough for the target to restart meanwhile.
    workers = await startRedisFunctions(b, ns, 'fencing-restart', {
      replicas: { reconcile: 1, health: 1 },
      env: { health: { TIDEWAY_FAILPOINTS: 'failover.before-promote=stall:5000' } },
    });
    await rdc.apply('restart', { version: '7.0', replicas: 2, failover: { after: '3s' } });
    await rdc.ready('restart');
    const pw = await rdc.password('restart');
    const keys = await writeKeys('restart', pw, 200);
    const ip1 = await podIp('restart', 'restart-1');
    const runBefore = (await info(ip1, pw)).server?.run_id;

    await b.faults.holdDownPod(ns, 'restart-0');
    await until(
      'the failover paused before promoting restart-1',
      async () => (workers.some((w) => w.output().includes('failpoint: stalling')) ? true : undefined),
      30_000,
      100,
    );
    expect((await rdc.get('restart')).status?.master).toBe('restart-1');
    // The target restarts (SIGKILL): it comes back fenced, from what its disk held, not from
    // what was judged (it never saved the 200 keys).
    await b.faults.killContainer(ns, 'restart-1');
    await until(
      'restart-1 answering again as another process',
      async () => {
        const i = await info(ip1, pw).catch(() => undefined);
        return i?.server?.run_id && i.server.run_id !== runBefore ? true : undefined;
      },
      20_000,
      100,
    );

    // The paused run wakes up, finds another process, and undoes its record.
    const healthy = await until(
      'the record back on restart-0, nobody promoted (NoSafeCandidate)',
      async () => {
        const rc = await rdc.get('restart');
        const c = await condition('restart', 'Healthy');
        return rc.status?.master === 'restart-0' && c?.reason === 'NoSafeCandidate' ? c : undefined;
      },
      30_000,
      250,
    );
    expect(healthy.message).toContain('restart-1');
    await sleep(5000);
    const rc = await rdc.get('restart');
    expect(rc.status?.master).toBe('restart-0');
    expect(rc.status?.failover?.count ?? 0).toBe(0);
    expect(parseReplication(await info(ip1, pw)).role).toBe('replica');

    await b.faults.releasePod(ns, 'restart-0');
    expect((await rdc.ready('restart', 90_000)).status?.master).toBe('restart-0');
    for (const p of await rdc.pods('restart'))
      expect(await missingKeys(ipOf(p), pw, keys), `${p.metadata?.name} lost keys`).toEqual([]);
  });
});
