import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { objectLocks } from '../../shared/runtime/object-lock.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventReasons,
  ipOf,
  redisClusters,
  refusals,
  startFunction,
} from '../support/redis.ts';
import { backups, bedStore, bedStoreSpec, createS3Credentials, restoredContent } from './support/backups.ts';
import { contentOf, expectSameContent, fillRandom } from './support/dataset.ts';
import { binaryClient } from './support/resp.ts';
import type { TestServer } from './support/servers.ts';

const MiB = 1024 * 1024;

/**
 * A backup and its cluster's other work: the cluster's lock is held only while a source is chosen
 * and its snapshot opened, so a failover is not held up by a backup that streams for minutes, and
 * a backup that finds the cluster busy waits without spending an attempt.
 */
describe('backup beside failover', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  let bus: Bus | undefined;
  const workers: Worker[] = [];
  const servers: TestServer[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);

  const onMaster = async <T>(f: (c: Awaited<ReturnType<typeof binaryClient>>) => Promise<T>) => {
    const rc = await rdc.get('fo');
    const m = (await rdc.pods('fo')).find((p) => p.metadata?.name === rc.status?.master);
    const c = await binaryClient({ host: ipOf(m), port: 6379, password: await rdc.password('fo') });
    try {
      return await f(c);
    } finally {
      c.close();
    }
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'backup-fo');
    dir = await mkdtemp(join(tmpdir(), 'twbed-backup-fo-'));
    bus = await connectBus(b.info.natsUrl, 'backup-failover-test');
    const id = `backup-fo-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    workers.push(await startFunction(b, ns, id, 'reconcile', { TIDEWAY_REPLICA: '0' }));
    workers.push(await startFunction(b, ns, id, 'health', { TIDEWAY_REPLICA: '0' }));
    // 24 MiB at 1 MiB/s: a backup that lasts well past failover.after.
    workers.push(
      await startFunction(b, ns, id, 'backup', {
        TIDEWAY_REPLICA: '0',
        TIDEWAY_BACKUP_MAX_BYTES_PER_SECOND: String(MiB),
      }),
    );
    await createS3Credentials(b, ns);
    await rdc.apply('fo', {
      version: '7.0',
      replicas: 3,
      failover: { after: '3s' },
      backup: { store: bedStoreSpec(b, `e2e/${ns}`, { compression: 'none' }) },
    });
    await rdc.ready('fo');
    await onMaster(async (c) => {
      await fillRandom(c, 24);
      expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(servers.map((s) => s.stop()));
    await bus?.close();
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    expect(refusals(workers)).toEqual([]);
  });

  it('waits for a busy cluster without spending an attempt, then runs', async () => {
    // Another run (a reconcile, a restore) holds the cluster's lock when the Backup arrives.
    const locks = await objectLocks(bus as Bus, { owner: 'test' });
    const lease = await locks.acquire(objectKeyOf({ kind: 'RedisCluster', namespace: ns, name: 'fo' }), {});
    try {
      await bk.create('busy', { cluster: { name: 'fo' } });
      const waiting = await until(
        'Backup busy waiting for the cluster',
        async () => {
          const s = (await bk.get('busy')).status;
          return findCondition(s?.conditions as never, 'Completed')?.reason === 'ClusterBusy' ? s : undefined;
        },
        30_000,
        200,
      );
      expect(waiting?.phase).not.toBe('Running');
      expect(waiting?.attempts ?? 0).toBe(0);
    } finally {
      await lease.release();
    }
    const done = await bk.phase('busy', 'Completed', 120_000);
    expect(done.status?.attempts).toBe(1);
  });

  it('a failover goes ahead while a backup streams, and the backup completes', async () => {
    const before = await rdc.get('fo');
    const master = before.status?.master ?? '';
    await bk.create('long', { cluster: { name: 'fo' } });
    const running = await until(
      'long streaming from a replica',
      async () => {
        const s = (await bk.get('long')).status;
        if (s?.phase === 'Completed') throw new Error('completed before the master could be lost');
        return (s?.progress?.bytes ?? 0) > 2 * MiB && s?.source ? s : undefined;
      },
      60_000,
      100,
    );
    expect(running.source).not.toBe(master);
    await b.faults.holdDownPod(ns, master);
    try {
      const moved = await until(
        'a new master',
        async () => {
          const rc = await rdc.get('fo');
          return rc.status?.master && rc.status.master !== master ? rc : undefined;
        },
        30_000,
        200,
      );
      // Decided while the backup was still streaming: the backup did not hold the failover up.
      expect((await bk.get('long')).status?.phase).toBe('Running');
      expect(moved.status?.failover?.last).toMatchObject({ from: master, reason: 'MasterUnreachable' });
    } finally {
      await b.faults.releasePod(ns, master);
    }
    const done = await bk.phase('long', 'Completed', 180_000);
    expect(done.status?.attempts).toBe(1);
    // The snapshot is the cluster's data: what the new master holds (no writes since).
    const content = await onMaster((c) => contentOf(c));
    expectSameContent(await restoredContent(b, done, { dir, compression: 'none', servers }), content);
    await expect.poll(() => eventReasons(b, ns, 'fo'), EVENTS_RECORDED).toContain('Failover');
    expect((await bedStore(b).unfinished(`e2e/${ns}/`)).length).toBe(0);
    await rdc.ready('fo');
  });
});
