import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  eventReasons,
  ipOf,
  missingKeys,
  quorumAt,
  redisAt,
  redisClusters,
  refusals,
  startRedisFunctions,
  startWriter,
} from '../support/redis.ts';

/**
 * Scaling and version upgrades of RedisClusters with the product's functions on the test bed,
 * under a client that keeps writing through the master Service the whole time.
 */
describe('redis cluster scaling and upgrades', () => {
  const b = bed();
  let ns = '';
  const workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis-ops');
    workers.push(...(await startRedisFunctions(b, ns, 'redis-ops-test')));
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    // Least privilege is enough: no function was refused anything along the way.
    expect(refusals(workers)).toEqual([]);
  });

  const serverPids = async (name: string) =>
    Object.fromEntries(
      await Promise.all(
        (await rdc.pods(name)).map(
          async (p) =>
            [p.metadata?.name, (await b.faults.containerPids(ns, p.metadata?.name ?? '')).redis] as const,
        ),
      ),
    );
  const masterService = async (name: string) =>
    (await b.core.readNamespacedService({ namespace: ns, name })).spec?.clusterIP ?? '';

  it('scales 3 → 1 → 3 without restarting the master: it takes writes all along, the write quorum follows at run time', async () => {
    await rdc.apply('solo', { version: '7.0', replicas: 3 });
    const rc = await rdc.ready('solo');
    expect(rc.status?.master).toBe('solo-0');
    const pw = await rdc.password('solo');
    const before = await serverPids('solo');
    const masterIp = ipOf((await rdc.pods('solo')).find((p) => p.metadata?.name === 'solo-0'));
    // Straight to the master, one SET every 20 ms: any refusal (NOREPLICAS) or restart shows.
    const c = await redisAt(masterIp, pw);
    const errors: string[] = [];
    let writes = 0;
    let stopped = false;
    const loop = (async () => {
      for (let i = 0; !stopped; i++) {
        try {
          await c.command('SET', `solo${i}`, '1');
          writes++;
        } catch (error) {
          errors.push(error instanceof Error ? error.message : String(error));
        }
        await sleep(20);
      }
    })();
    try {
      await rdc.apply('solo', { version: '7.0', replicas: 1 });
      await until(
        'one instance, ready',
        async () => ((await rdc.pods('solo')).length === 1 ? rdc.ready('solo') : undefined),
        120_000,
        500,
      );
      // The replicas' connections are gone: a master that still wanted one would refuse now.
      await sleep(2000);
      expect(await quorumAt(masterIp, pw)).toEqual({ toWrite: '0', maxLag: '10' });

      await rdc.apply('solo', { version: '7.0', replicas: 3 });
      const three = await rdc.ready('solo');
      expect(three.status?.master).toBe('solo-0');
      // Every server, the master once a replica is in sync with it.
      for (const p of await rdc.pods('solo'))
        await until(
          `${p.metadata?.name} takes min-replicas-to-write 1`,
          async () => ((await quorumAt(ipOf(p), pw)).toWrite === '1' ? true : undefined),
          15_000,
          250,
        );
    } finally {
      stopped = true;
      await loop;
      c.close();
    }
    process.stdout.write(`[redis] scaling 3 → 1 → 3: ${writes} writes, ${errors.length} refused\n`);
    expect(errors).toEqual([]);
    expect(writes).toBeGreaterThan(100);
    expect((await serverPids('solo'))['solo-0'], 'the master was restarted').toBe(before['solo-0']);
  });

  it('scales 3 → 5 → 2 by apply: serving instances keep running, data intact, the master hands over first', async () => {
    await rdc.apply('scaled', { version: '7.0', replicas: 3 });
    await rdc.ready('scaled');
    const pw = await rdc.password('scaled');
    const writer = startWriter(await masterService('scaled'), pw, 'w');
    const before = await serverPids('scaled');

    await rdc.apply('scaled', { version: '7.0', replicas: 5 });
    const five = await rdc.ready('scaled');
    expect(five.status).toMatchObject({ ready: '5/5', master: 'scaled-0' });
    const after = await serverPids('scaled');
    for (const [pod, pid] of Object.entries(before)) expect(after[pod], `${pod} was restarted`).toBe(pid);

    // Put the master where scaling down to 2 would remove it: three instances held down at once
    // make health promote scaled-3 or scaled-4 (whichever had received more from the writer).
    const down = ['scaled-0', 'scaled-1', 'scaled-2'];
    for (const p of down) await b.faults.holdDownPod(ns, p);
    await until(
      'scaled-3 or scaled-4 promoted',
      async () =>
        ['scaled-3', 'scaled-4'].includes((await rdc.get('scaled')).status?.master ?? '') ? true : undefined,
      60_000,
      250,
    );
    for (const p of down) await b.faults.releasePod(ns, p);
    await rdc.ready('scaled');
    const switchoversBefore = (await eventReasons(b, ns, 'scaled')).filter((r) => r === 'Switchover').length;

    await rdc.apply('scaled', { version: '7.0', replicas: 2 });
    const two = await until(
      '2 instances, ready',
      async () => {
        const rc = await rdc.ready('scaled');
        return (await rdc.pods('scaled')).length === 2 ? rc : undefined;
      },
      120_000,
      500,
    );
    expect(two.status?.ready).toBe('2/2');
    expect(['scaled-0', 'scaled-1']).toContain(two.status?.master);
    const reasons = await eventReasons(b, ns, 'scaled');
    expect(reasons.filter((r) => r === 'Switchover').length).toBe(switchoversBefore + 1);

    const { acked, failed } = await writer.stop();
    process.stdout.write(
      `[redis] scaling: ${acked.length} writes acknowledged, ${failed} refused during failover/switchover\n`,
    );
    expect(acked.length).toBeGreaterThan(100);
    const master = (await rdc.pods('scaled')).find((p) => p.metadata?.name === two.status?.master);
    expect(await missingKeys(ipOf(master), pw, acked)).toEqual([]);
  });

  it('upgrades Redis 6.2 → 7.0, then switches to Valkey 8.1 by image: replicas first, one switchover each, no acknowledged write lost', async () => {
    await rdc.apply('up', { version: '6.2', replicas: 3 });
    const first = await rdc.ready('up');
    expect(first.status?.version).toMatch(/^6\.2\./);
    const pw = await rdc.password('up');
    const writer = startWriter(await masterService('up'), pw, 'u');

    const rollTo = async (spec: Record<string, unknown>, version: RegExp) => {
      const uids = new Set((await rdc.pods('up')).map((p) => p.metadata?.uid));
      const switchovers = async () =>
        (await eventReasons(b, ns, 'up')).filter((r) => r === 'Switchover').length;
      const s0 = await switchovers();
      const started = performance.now();
      await rdc.apply('up', { replicas: 3, ...spec });
      const done = await until(
        `every pod runs ${version}`,
        async () => {
          const rc = await rdc.ready('up');
          const pods = await rdc.pods('up');
          return version.test(rc.status?.version ?? '') && pods.every((p) => !uids.has(p.metadata?.uid))
            ? rc
            : undefined;
        },
        240_000,
        1000,
      );
      process.stdout.write(
        `[redis] upgrade to ${done.status?.version}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
      );
      expect(await switchovers()).toBe(s0 + 1);
      return done;
    };
    await rollTo({ version: '7.0' }, /^7\.0\.\d+$/);
    await rollTo({ image: 'valkey/valkey:8.1' }, /^8\.1\.\d+$/);

    const { acked, failed } = await writer.stop();
    process.stdout.write(
      `[redis] upgrades: ${acked.length} writes acknowledged, ${failed} refused during switchovers\n`,
    );
    const rc = await rdc.get('up');
    const master = (await rdc.pods('up')).find((p) => p.metadata?.name === rc.status?.master);
    expect(await missingKeys(ipOf(master), pw, acked)).toEqual([]);
  });

  it('stops at the first replica on an image that cannot run, keeps serving, and recovers when corrected', async () => {
    const before = await rdc.ready('up');
    const pw = await rdc.password('up');
    const uid = async () =>
      Object.fromEntries((await rdc.pods('up')).map((p) => [p.metadata?.name, p.metadata?.uid]));
    const uids = await uid();
    const good = { replicas: 3, image: 'valkey/valkey:8.1' };
    await rdc.apply('up', { ...good, image: 'example.com/no-such-image:1' });
    const cond = await until(
      'a reason on the cluster',
      async () => {
        const c = (await rdc.get('up')).status?.conditions?.find((c) => c.type === 'Ready');
        return c?.status === 'False' && /Image/.test(c.reason ?? '') ? c : undefined;
      },
      90_000,
      500,
    );
    // Replicas roll first, highest ordinal first: the master can be any pod after the upgrades above.
    const master0 = before.status?.master ?? '';
    const first = ['up-0', 'up-1', 'up-2'].filter((p) => p !== master0).at(-1) ?? '';
    const untouched = ['up-0', 'up-1', 'up-2'].filter((p) => p !== first);
    expect(cond.message).toContain(first);
    // The rollout stops there: no further restart, no switchover, the master serves with a replica.
    await new Promise((r) => setTimeout(r, 5000));
    const during = await uid();
    for (const p of untouched) expect(during[p], `${p} was replaced`).toBe(uids[p]);
    const rc = await rdc.get('up');
    expect(rc.status?.master).toBe(before.status?.master);
    const master = (await rdc.pods('up')).find((p) => p.metadata?.name === rc.status?.master);
    const c = await redisAt(ipOf(master), pw);
    try {
      expect(await c.command('SET', 'during-bad-image', '1')).toBe('OK');
      expect(await c.command('WAIT', '1', '2000')).toBe(1);
    } finally {
      c.close();
    }

    await rdc.apply('up', good);
    const after = await rdc.ready('up');
    expect(after.status?.version).toMatch(/^8\.1\./);
    const now = await uid();
    for (const p of untouched) expect(now[p], `${p} was replaced`).toBe(uids[p]);
    expect(now[first]).not.toBe(during[first]);
  });
});
