import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Restore } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import {
  backups,
  bedStore,
  bedStoreSpec,
  createS3Credentials,
  restoredContent,
} from '../backup/support/backups.ts';
import { type Content, expectSameContent, fillRandom, populate } from '../backup/support/dataset.ts';
import type { TestServer } from '../backup/support/servers.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventReasons,
  redisClusters,
  refusals,
  serverlessWith,
  startFunction,
} from '../support/redis.ts';
import {
  clusterData,
  conditionOf,
  lastOutcome,
  putForeignObject,
  randomRdb,
  restores,
  startRestoreFunction,
} from './support.ts';

const stateOf = (r: Restore) =>
  JSON.parse(r.metadata.annotations?.['tideway.dev/restore-state'] ?? '{}') as {
    loads?: number;
    rollbacks?: number;
    load?: { of: string; replid: string; delivered: boolean; attempt: number };
  };

/**
 * The restore function stopped at the worst moments (issue 13): mid-transfer, after the master
 * loaded the data, after the end of the RDB went out. Whatever happens, the cluster ends with the
 * backup's data or the data it had, never a mix, and the Restore says which. The process is
 * stopped for real (SIGKILL, or its own exit at a failpoint); a fresh one takes the redelivery.
 */
describe('restore interrupted', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  let id = '';
  const workers: Worker[] = [];
  let restorers: Worker[] = [];
  let health: Worker;
  const servers: TestServer[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const rs = restores(b, () => ns);
  const data = clusterData(b, () => ns, 'cache');
  let b1Content: Content;

  const restorer = async (env: Record<string, string> = {}, serverless?: string) => {
    const w = await startRestoreFunction(
      b,
      ns,
      id,
      { TIDEWAY_REPLICA: String(restorers.length), ...env },
      serverless,
    );
    restorers.push(w);
    workers.push(w);
    return w;
  };
  const change = async (tag: string) => {
    const c = await data.clientOf(await data.master());
    try {
      await c.call('SET', 'str:text', `changed ${tag}`);
      await c.call('DEL', 'list:small');
      for (let i = 0; i < 20; i++) await c.call('SET', `added:${tag}:${i}`, `v${i}`);
      expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    } finally {
      c.close();
    }
  };
  const everyPod = async () =>
    Promise.all((await data.pods()).map(async (p) => [p, await data.contentOfPod(p)] as const));
  const expectCluster = async (expected: Content) => {
    await rdc.ready('cache');
    for (const [pod, content] of await everyPod()) {
      try {
        expectSameContent(content, expected);
      } catch (error) {
        throw new Error(`${pod}: ${(error as Error).message}`);
      }
    }
  };
  /** The master replicates from the feed and the RDB is on its way. */
  const transferring = async () => {
    const master = await data.master();
    await until(
      'the master receiving the RDB from the feed',
      async () => {
        const r = await data.replicationOf(master).catch(() => undefined);
        return r?.master_host === b.info.network.hostIp && r.master_sync_in_progress === '1'
          ? true
          : undefined;
      },
      60_000,
      50,
    );
    return master;
  };
  const writable = async () => {
    const c = await data.clientOf(await data.master());
    try {
      expect(String(await c.call('SET', 'writable', '1'))).toBe('OK');
    } finally {
      c.close();
    }
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'restore-int');
    id = `restore-int-${ns}`;
    dir = await mkdtemp(join(tmpdir(), 'twbed-restore-int-'));
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    workers.push(await startFunction(b, ns, id, 'reconcile', { TIDEWAY_REPLICA: '0' }));
    health = await startFunction(b, ns, id, 'health', { TIDEWAY_REPLICA: '0' });
    workers.push(health);
    workers.push(await startFunction(b, ns, id, 'backup', { TIDEWAY_REPLICA: '0' }));
    await createS3Credentials(b, ns);
    const store = bedStoreSpec(b, `e2e/${ns}`);
    await rdc.apply('cache', { version: '7.0', replicas: 3, backup: { store } });
    await rdc.ready('cache');
    const c = await data.clientOf(await data.master());
    await populate(c);
    await fillRandom(c, 8);
    expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    c.close();
    await bk.create('b1', { cluster: { name: 'cache' } });
    b1Content = await restoredContent(b, await bk.phase('b1', 'Completed'), {
      dir,
      compression: 'zstd',
      servers,
    });
  });

  afterEach(async () => {
    await Promise.all(restorers.map((w) => w.stop()));
    restorers = [];
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(servers.map((s) => s.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    expect(refusals(workers)).toEqual([]);
  });

  it('killed mid-transfer: the master keeps its data; the redelivered run loads again and completes, and says so', async () => {
    await change('k1');
    const before = await data.contentOfPod(await data.master());
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.restore-transfer=stall:60000' });
    await rs.create('r1', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    const master = await transferring();
    await w.kill();
    // Part of the RDB went out, and the master still has all of its own data.
    expect(stateOf(await rs.get('r1')).load).toMatchObject({ of: 'restore', attempt: 1, delivered: false });
    expectSameContent(await data.contentOfPod(master), before);

    await restorer();
    const r1 = await rs.ended('r1', 'Completed', 120_000);
    await expectCluster(b1Content);
    await writable();
    expect(stateOf(r1)).toMatchObject({ loads: 2, load: { attempt: 2 } });
    expect(conditionOf(r1, 'Completed')?.message).toMatch(
      /on load 2 \(the loads before were interrupted and changed nothing\)/,
    );
    expect(conditionOf(r1, 'ClusterData')).toMatchObject({ status: 'True', reason: 'Restored' });
    await expect
      .poll(() => eventReasons(b, ns, 'r1'), EVENTS_RECORDED)
      .toEqual(expect.arrayContaining(['Loading', 'LoadInterrupted', 'Completed']));
  });

  it('killed mid-transfer with no load left to try: Failed, and the cluster holds its data from before', async () => {
    await change('k2');
    const before = await data.contentOfPod(await data.master());
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.restore-transfer=stall:60000' });
    await rs.create('r2', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    await transferring();
    await w.kill();
    await restorer({ TIDEWAY_RESTORE_ATTEMPTS: '1' });
    const r2 = await rs.ended('r2', 'Failed', 120_000);
    expect(r2.status?.error?.reason).toBe('Interrupted');
    expect(r2.status?.error?.message).toMatch(/kept the data it had before the restore/);
    expect(conditionOf(r2, 'ClusterData')).toMatchObject({ status: 'False', reason: 'Untouched' });
    await expectCluster(before);
    await writable();
    expect(conditionOf(await rdc.get('cache'), 'Restoring')).toMatchObject({
      status: 'False',
      reason: 'RestoreFailed',
    });
    const ce = await lastOutcome(b, 'dev.tideway.restore.failed', {
      kind: 'Restore',
      namespace: ns,
      name: 'r2',
    });
    expect(ce.data).toMatchObject({ reason: 'Interrupted', at: 'Restoring', data: 'untouched' });
  });

  it('deleted while its cluster is Restoring and the function is gone: the master serves its own data again, and the condition ends saying so', async () => {
    await change('k5');
    const master = await data.master();
    const before = await data.contentOfPod(master);
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.restore-transfer=stall:60000' });
    await rs.create('r5', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    await transferring();
    await w.kill();
    expect(conditionOf(await rdc.get('cache'), 'Restoring')).toMatchObject({ status: 'True' });
    await b.custom.deleteNamespacedCustomObject({ ...TIDEWAY_KINDS.Restore, namespace: ns, name: 'r5' });
    await restorer();
    const ended = await until(
      'Restoring=False RestoreDeleted',
      async () => {
        const c = conditionOf(await rdc.get('cache'), 'Restoring');
        return c?.status === 'False' ? c : undefined;
      },
      90_000,
      250,
    );
    expect(ended).toMatchObject({ reason: 'RestoreDeleted' });
    expect(ended.message).toMatch(/^Restore r5 was deleted before it ended; the master kept the data it had/);
    expect((await data.replicationOf(master)).role).toBe('master');
    await expectCluster(before);
    await writable();
  });

  it('stopped after the master loaded the data: the redelivered run finds it by its replication id and does not load again', async () => {
    await change('k3');
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.after-restore=exit' });
    await rs.create('r3', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    const master = await data.master();
    // The process ends itself right after the load; the master already serves the loaded data.
    await until(
      'the master loaded and promoted',
      async () => {
        const load = stateOf(await rs.get('r3')).load;
        const r = await data.replicationOf(master).catch(() => undefined);
        return load && r?.role === 'master' && r.master_replid2 === load.replid ? true : undefined;
      },
      60_000,
      100,
    );
    await w.kill();
    expect((await rs.get('r3')).status?.phase).toBe('Restoring');
    await restorer();
    const r3 = await rs.ended('r3', 'Completed', 120_000);
    await expectCluster(b1Content);
    expect(stateOf(r3)).toMatchObject({ loads: 1, load: { attempt: 1 } });
    expect(await eventReasons(b, ns, 'r3')).not.toContain('LoadInterrupted');
  });

  it('stopped as the end of the RDB went out: the master may be half-loaded, so it is rolled back to the safety backup', async () => {
    await change('k4');
    const before = new Map(await everyPod());
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.restore-delivered=exit' });
    await rs.create('r4', { cluster: { name: 'cache' }, source: { backup: { name: 'b1' } } });
    await until(
      'the end of the RDB recorded as going out',
      async () => (stateOf(await rs.get('r4')).load?.delivered ? true : undefined),
      120_000,
      100,
    );
    await w.kill();
    await restorer();
    const r4 = await rs.ended('r4', 'RolledBack', 120_000);
    expect(r4.status?.error?.reason).toBe('Interrupted');
    expect(r4.status?.error?.message).toMatch(/rolled back to safety backup r4-safety/);
    expect(conditionOf(r4, 'ClusterData')).toMatchObject({ status: 'False', reason: 'RolledBack' });
    expect(stateOf(r4)).toMatchObject({ loads: 1, rollbacks: 1, load: { of: 'rollback' } });
    // The cluster holds the safety backup's data: what it had before the restore.
    const safety = await bk.get('r4-safety');
    const source = before.get(safety.status?.source ?? '');
    expect(source).toBeDefined();
    expectSameContent(
      await restoredContent(b, safety, { dir, compression: 'zstd', servers }),
      source as Content,
    );
    await expectCluster(await data.contentOfPod(await data.master()));
    expectSameContent(await data.contentOfPod(await data.master()), source as Content);
    await writable();
    expect(conditionOf(await rdc.get('cache'), 'Restoring')).toMatchObject({
      status: 'False',
      reason: 'RolledBack',
    });
    await expect
      .poll(() => eventReasons(b, ns, 'r4'), EVENTS_RECORDED)
      .toEqual(expect.arrayContaining(['LoadInterrupted', 'RollingBack', 'RolledBack']));
    const ce = await lastOutcome(b, 'dev.tideway.restore.failed', {
      kind: 'Restore',
      namespace: ns,
      name: 'r4',
    });
    expect(ce.data).toMatchObject({ phase: 'RolledBack', data: 'rolledBack', safetyBackup: 'r4-safety' });
  });

  it('given up on mid-load (its deliveries used up): health’s look at the Restore its cluster’s mark names brings its next run, which settles the load — the master serves its own data — and the cluster takes the next restore', async () => {
    await change('k6');
    const master = await data.master();
    const before = await data.contentOfPod(master);
    // No health until the give-up: its looks are runs of r6 that would load again in its place.
    await health.stop();
    // Deliveries of one attempt each: the redelivery after a crash is past the limit.
    const oneAttempt = await serverlessWith(dir, 'restore', { maximumRetryAttempts: 1 });
    const w = await restorer({ TIDEWAY_FAILPOINTS: 'restore.restore-transfer=stall:60000' }, oneAttempt);
    await rs.create('r6', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    await transferring();
    await w.kill();
    const next = await restorer({}, oneAttempt);
    const given = await until(
      'the runtime giving up on r6',
      async () => {
        const r = await rs.get('r6');
        return conditionOf(r, 'Completed')?.reason === 'RetriesExhausted' ? r : undefined;
      },
      120_000,
      250,
    );
    // Given up mid-load: still Restoring, the cluster still marked, the master still the feed's.
    expect(given.status?.phase).toBe('Restoring');
    expect(conditionOf(await rdc.get('cache'), 'Restoring')).toMatchObject({ status: 'True' });
    expect((await data.replicationOf(master)).master_host).toBe(b.info.network.hostIp);
    // No change of r6's own comes: health's next look (every 30 s at most) brings its next run,
    // to a function as deployed.
    await next.stop();
    await restorer();
    health = await startFunction(b, ns, id, 'health', { TIDEWAY_REPLICA: '0' });
    workers.push(health);
    const r6 = await rs.ended('r6', 'Failed', 90_000);
    expect(r6.status?.error).toMatchObject({ reason: 'RetriesExhausted' });
    expect(r6.status?.error?.message).toMatch(/nothing was restored: create the Restore again$/);
    expect(conditionOf(r6, 'ClusterData')).toMatchObject({ status: 'False', reason: 'Untouched' });
    expect((await data.replicationOf(master)).role).toBe('master');
    expect(conditionOf(await rdc.get('cache'), 'Restoring')).toMatchObject({
      status: 'False',
      reason: 'RestoreFailed',
    });
    await expectCluster(before);
    await writable();
    // Nothing is left that blocks the cluster's next restore.
    await rs.create('r7', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    await rs.ended('r7', 'Completed', 120_000);
    await expectCluster(b1Content);
  });

  it('stopped just before or after recording that the loaded data set is over maxmemory: the next run still rolls back', async () => {
    // Last in this file: cache gets a maxmemory its data fits (a rolling change of its config).
    const config = { maxmemory: '64mb', 'maxmemory-policy': 'allkeys-lru' };
    await rdc.apply('cache', {
      version: '7.0',
      replicas: 3,
      backup: { store: bedStoreSpec(b, `e2e/${ns}`) },
      config,
    });
    await until(
      'every instance running with maxmemory 64mb',
      async () => {
        const all = await Promise.all(
          (await data.pods()).map(async (p) => {
            const c = await data.clientOf(p);
            try {
              return String(await c.call('CONFIG', 'GET', 'maxmemory')).includes(String(64 * 2 ** 20));
            } finally {
              c.close();
            }
          }),
        );
        return all.length === 3 && all.every(Boolean) ? true : undefined;
      },
      180_000,
      1000,
    );
    await rdc.ready('cache');
    const before = await data.contentOfPod(await data.master());
    // 72 MiB under a manifest from before the memory figures: nothing to weigh before the load.
    const k = await putForeignObject(
      bedStore(b),
      `e2e/${ns}/foreign`,
      'evicted',
      { product: 'redis', version: '7.0.15' },
      { rdb: await randomRdb(servers, 72) },
    );
    // Stopped before the refusal was recorded (the next run finds the master still a replica of
    // the gone feed, and counts again before promoting it), and right after.
    for (const [failpoint, name] of [
      ['restore.refusing', 'r-max1'],
      ['restore.refused', 'r-max2'],
    ] as const) {
      const w = await restorer({ TIDEWAY_FAILPOINTS: `${failpoint}=exit` });
      await rs.create(name, {
        cluster: { name: 'cache' },
        source: {
          s3: {
            store: bedStoreSpec(b, `e2e/${ns}`, { compression: 'none', encryption: { secretName: '' } }),
            key: k,
          },
        },
      });
      await until(
        `${name}: the function stopped at ${failpoint}`,
        async () => (w.exitCode() !== null ? true : undefined),
        180_000,
        250,
      );
      await restorer();
      const r = await rs.ended(name, 'RolledBack', 180_000);
      expect(r.status?.error?.reason, name).toBe('ExceedsMaxmemory');
      expect(r.status?.error?.message).toMatch(/the loaded data set counts \d+ MiB against maxmemory/);
      expect(stateOf(r)).toMatchObject({ loads: 1, rollbacks: 1, load: { of: 'rollback' } });
      await expectCluster(before);
      // The next iteration's stop must happen in its own function, not in this healthy one.
      await Promise.all(restorers.map((r) => r.stop()));
      restorers = [];
    }
  });
});
