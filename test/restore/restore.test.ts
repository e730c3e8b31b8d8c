import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthorizationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupOutcome } from '../../functions/backup/report.ts';
import { MADE_BY } from '../../functions/restore/safety.ts';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import type { Backup } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { backups, bedStore, keyOf, restoredContent } from '../backup/support/backups.ts';
import { type Content, expectSameContent, fillRandom, populate } from '../backup/support/dataset.ts';
import type { TestServer } from '../backup/support/servers.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { holdLock, publishEvent } from '../support/bus.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventNotes,
  eventReasons,
  redisClusters,
  refusals,
  startFunction,
} from '../support/redis.ts';
import { newSecret, startWebhook } from '../webhook/support.ts';
import {
  clusterData,
  conditionOf,
  isSafety,
  lastOutcome,
  putForeignObject,
  randomRdb,
  restores,
  startRestoreFunction,
} from './support.ts';

/**
 * Restores end to end on the test bed (issue 13): the product's functions (watcher, reconcile,
 * health, backup and restore, each as its own ServiceAccount), a real 3-instance RedisCluster
 * with every core type, the real S3 server. A restore loads into the running master: no pod
 * restarts, and every replica ends with the master's content.
 */
describe('restore', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  const workers: Worker[] = [];
  /** The backup function, which some tests stop for a while; undefined while stopped. */
  let backupFn: Worker | undefined;
  /** The restore function, with its safety backup fallback (see beforeAll). */
  let restoreFn: Worker | undefined;
  const servers: TestServer[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const rs = restores(b, () => ns);
  const data = clusterData(b, () => ns, 'cache');
  const { s3 } = b.info;
  const store = bedStore(b);
  const key = randomBytes(32);
  let prefix = '';
  /** The content of Backup b1, read from its object. */
  let b1Content: Content;

  const secret = (name: string, body: Record<string, Buffer | string>) =>
    b.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name },
        data: Object.fromEntries(
          Object.entries(body).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
      },
    });
  const storeSpec = (o: Record<string, unknown> = {}) => ({
    s3: {
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      prefix,
      credentialsSecret: { name: 's3-creds' },
    },
    compression: 'zstd',
    encryption: { secretName: 'backup-key' },
    ...o,
  });
  const contentOfBackup = (done: Backup) =>
    restoredContent(b, done, { dir, compression: 'zstd', encryptionKey: key, servers });
  /** Writes on the master: the data a restore must replace. */
  const change = async (tag: string) => {
    const c = await data.clientOf(await data.master());
    try {
      await c.call('SET', 'str:text', `changed ${tag}`);
      await c.call('DEL', 'list:small', 'set:large');
      await c.call('HSET', 'hash:small', 'f1', tag);
      await c.call('XADD', 'stream:s', '*', 'n', tag);
      for (let i = 0; i < 20; i++) await c.call('SET', `added:${tag}:${i}`, randomBytes(100));
      expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    } finally {
      c.close();
    }
  };
  const backupNow = async (name: string) => {
    await bk.create(name, { cluster: { name: 'cache' } });
    return bk.phase(name, 'Completed');
  };
  const everyPod = async () =>
    Promise.all((await data.pods()).map(async (p) => [p, await data.contentOfPod(p)] as const));
  /** The master and every replica hold `expected`, and the cluster is Ready again. */
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

  /**
   * A plain object that starts as an RDB of `magic` (random bytes after it) with a valid manifest
   * beside it naming `redis`: what a restore checks before it touches anything. Returns its key.
   */
  const putForeign = (
    name: string,
    magic: string,
    redis: Record<string, unknown>,
    o: { changedAfter?: boolean; rdb?: Buffer } = {},
  ) => putForeignObject(store, `${prefix}/foreign`, name, redis, { magic, ...o });
  /** A store spec for putForeign's objects. */
  const plainStore = () => storeSpec({ compression: 'none', encryption: { secretName: '' } });

  const id = () => `restore-${ns}`;
  const startBackupFn = async () => {
    if (backupFn) return;
    backupFn = await startFunction(b, ns, id(), 'backup', {
      TIDEWAY_REPLICA: '0',
      TIDEWAY_BACKUP_IN_USE_RECHECK_MS: '600000',
    });
    workers.push(backupFn);
  };
  const stopBackupFn = async () => {
    await backupFn?.stop();
    backupFn = undefined;
  };
  /** The restore function, with a 10-minute safety backup fallback unless told otherwise. */
  const startRestoreFn = async (recheckMs = 600_000) => {
    await restoreFn?.stop();
    restoreFn = await startRestoreFunction(b, ns, id(), {
      TIDEWAY_REPLICA: '0',
      TIDEWAY_RESTORE_SAFETY_RECHECK_MS: String(recheckMs),
    });
    workers.push(restoreFn);
  };

  /**
   * A Restore of `source` into cache, waiting for its safety backup, while the backup function
   * is stopped: that backup stays unfinished and no outcome of it comes until the caller starts
   * the function again. Returns the safety backup. The Restore's own runs go on for a moment
   * (those of its own writes), each finding the backup unfinished: the wait lets them pass.
   */
  const waitingOnSafety = async (name: string, source: string) => {
    await stopBackupFn();
    await rs.create(name, { cluster: { name: 'cache' }, source: { backup: { name: source } } });
    const safety = await until(
      `${name} waiting for its safety backup`,
      async () =>
        (await rs.get(name)).status?.phase === 'SafetyBackup'
          ? bk.get(`${name}-safety`).catch(() => undefined)
          : undefined,
      60_000,
      250,
    );
    await sleep(3000);
    return safety;
  };
  /** Marks a safety backup finished, as far as its Restore can see: a run of it now loads. */
  const markFinished = (backup: string) =>
    b.custom.patchNamespacedCustomObjectStatus(
      {
        ...TIDEWAY_KINDS.Backup,
        namespace: ns,
        name: backup,
        body: {
          status: {
            phase: 'Completed',
            completedAt: new Date().toISOString(),
            location: `s3://${s3.bucket}/${prefix}/no-such-object`,
            size: 0,
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'restore');
    prefix = `e2e/${ns}`;
    dir = await mkdtemp(join(tmpdir(), 'twbed-restore-e2e-'));
    workers.push(await startFunction(b, ns, id(), 'watcher', { TIDEWAY_WATCHER_ID: id() }));
    workers.push(await startFunction(b, ns, id(), 'reconcile', { TIDEWAY_REPLICA: '0' }));
    workers.push(await startFunction(b, ns, id(), 'health', { TIDEWAY_REPLICA: '0' }));
    // A fallback look at an unfinished safety backup only after 10 minutes: every restore here
    // moves on from SafetyBackup by the Backup's outcome alone (functions/restore/waiting.ts).
    // Likewise a deleted Backup that a restore used goes by the Restore's outcome alone.
    await startRestoreFn();
    await startBackupFn();
    await secret('s3-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('backup-key', { key });
    await rdc.apply('cache', { version: '7.0', replicas: 3, backup: { store: storeSpec() } });
    await rdc.ready('cache');
    const c = await data.clientOf(await data.master());
    await populate(c);
    await fillRandom(c, 8);
    expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    c.close();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(servers.map((s) => s.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    // Least privilege is enough: no function was refused anything along the way.
    expect(refusals(workers)).toEqual([]);
  });

  it('restores a Backup by name into the running master: every type, every instance, a safety backup first', async () => {
    const b1 = await backupNow('b1');
    b1Content = await contentOfBackup(b1);
    await change('one');
    const before = new Map(await everyPod());
    const master = await data.master();
    const uids = new Map((await rdc.pods('cache')).map((p) => [p.metadata?.name, p.metadata?.uid]));

    await rs.create('r1', { cluster: { name: 'cache' }, source: { backup: { name: 'b1' } } });
    const r1 = await rs.ended('r1', 'Completed');
    await expectCluster(b1Content);
    // In place: the same pods, the same master, which takes writes again.
    expect(new Map((await rdc.pods('cache')).map((p) => [p.metadata?.name, p.metadata?.uid]))).toEqual(uids);
    expect(await data.master()).toBe(master);
    const c = await data.clientOf(master);
    expect(String(await c.call('SET', 'after-restore', '1'))).toBe('OK');
    const info = await c.text('INFO', 'replication');
    c.close();

    expect(r1.status).toMatchObject({
      source: 'backup b1',
      safetyBackup: 'r1-safety',
      keys: b1Content.values.size,
      progress: { bytes: b1.status?.rdbSize, percent: 100 },
    });
    expect(r1.status?.completedAt).toBeDefined();
    expect(conditionOf(r1, 'Completed')).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(conditionOf(r1, 'ClusterData')).toMatchObject({ status: 'True', reason: 'Restored' });
    const rc = await rdc.get('cache');
    expect(conditionOf(rc, 'Restoring')).toMatchObject({ status: 'False', reason: 'Restored' });
    expect(conditionOf(rc, 'Restoring')?.message).toMatch(/^Restore r1 /);
    // The cluster's history is the restored data's: the master's id now.
    expect(info).toContain(`master_replid:${rc.status?.replication?.id}`);

    // The safety backup: Completed, labelled, naming its Restore, holding the data from before.
    const safety = await bk.get('r1-safety');
    expect(safety.status?.phase).toBe('Completed');
    expect(isSafety(safety)).toBe(true);
    expect(safety.metadata.annotations).toMatchObject({
      'tideway.dev/restore': 'r1',
      'tideway.dev/restore-uid': r1.metadata.uid,
    });
    expect(safety.metadata.ownerReferences ?? []).toEqual([]);
    const source = before.get(safety.status?.source ?? '');
    expect(source).toBeDefined();
    expectSameContent(await contentOfBackup(safety), source as Content);

    await expect
      .poll(() => eventReasons(b, ns, 'r1'), EVENTS_RECORDED)
      .toEqual(
        expect.arrayContaining([
          'Started',
          'Verified',
          'SafetyBackupStarted',
          'SafetyBackupCompleted',
          'Loading',
          'Completed',
        ]),
      );
    await expect
      .poll(() => eventReasons(b, ns, 'cache'), EVENTS_RECORDED)
      .toEqual(expect.arrayContaining(['RestoreLoading', 'RestoreCompleted']));
    const ce = await lastOutcome(b, 'dev.tideway.restore.completed', {
      kind: 'Restore',
      namespace: ns,
      name: 'r1',
    });
    expect(ce.data).toMatchObject({
      cluster: 'cache',
      restore: 'r1',
      source: 'backup b1',
      keys: b1Content.values.size,
      safetyBackup: 'r1-safety',
    });

    // The way back works: the safety backup, restored by name, brings the data from before r1.
    await rs.create('r1-back', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'r1-safety' } },
      safetyBackup: false,
    });
    expect((await rs.ended('r1-back', 'Completed')).status?.source).toBe('backup r1-safety');
    await expectCluster(source as Content);
  });

  it('refuses a backup object changed in the store: Failed at Verifying, nothing touched, no safety backup', async () => {
    const b2 = await backupNow('b2');
    await change('two');
    const objectKey = keyOf(b2.status?.location ?? '', s3.bucket);
    // One byte in the middle, the same size: only the checksum can tell.
    const bytes = Buffer.from((await store.get(objectKey, 64 * 1024 * 1024)) ?? []);
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0xff;
    await store.put(objectKey, bytes, 'application/octet-stream');
    const master = await data.master();
    const before = await data.contentOfPod(master);
    const replid = (await data.replicationOf(master)).master_replid;

    await rs.create('r2', { cluster: { name: 'cache' }, source: { backup: { name: 'b2' } } });
    const r2 = await rs.ended('r2', 'Failed');
    expect(r2.status?.error?.reason).toBe('ChecksumMismatch');
    expect(r2.status?.error?.message).toMatch(/changed after it was stored/);
    expect(conditionOf(r2, 'Completed')).toMatchObject({ status: 'False', reason: 'ChecksumMismatch' });
    expect(conditionOf(r2, 'Completed')?.message).toMatch(/^failed at Verifying/);
    expect(conditionOf(r2, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expect(r2.status?.safetyBackup).toBeUndefined();
    await expect(bk.get('r2-safety')).rejects.toMatchObject({ code: 404 });
    // Untouched: the same content, and the master never replicated from anything.
    expectSameContent(await data.contentOfPod(master), before);
    expect((await data.replicationOf(master)).master_replid).toBe(replid);
    // The condition still tells of the last restore that ran (r1-back, the first test's last).
    expect(conditionOf(await rdc.get('cache'), 'Restoring')?.message).toMatch(/^Restore r1-back /);
    const ce = await lastOutcome(b, 'dev.tideway.restore.failed', {
      kind: 'Restore',
      namespace: ns,
      name: 'r2',
    });
    expect(ce.data).toMatchObject({ reason: 'ChecksumMismatch', at: 'Verifying', data: 'untouched' });
  });

  it('a safety backup that fails ends the restore at once, before any data is touched', async () => {
    // The cluster's store names a credentials Secret that does not exist: its safety backup fails.
    const spec = { version: '7.0', replicas: 3 };
    await rdc.apply('cache', {
      ...spec,
      backup: {
        store: storeSpec({ s3: { ...storeSpec().s3, credentialsSecret: { name: 'no-such-creds' } } }),
      },
    });
    try {
      const master = await data.master();
      const before = await data.contentOfPod(master);
      const replid = (await data.replicationOf(master)).master_replid;
      await rs.create('r-unsafe', { cluster: { name: 'cache' }, source: { backup: { name: 'b1' } } });
      // The restore function looks again only after 10 minutes: the Backup's outcome ends it.
      const r = await rs.ended('r-unsafe', 'Failed', 60_000);
      expect(r.status?.error?.reason).toBe('SafetyBackupFailed');
      expect(r.status?.error?.message).toMatch(/CredentialsSecretNotFound.*nothing was restored/);
      expect(conditionOf(r, 'Completed')?.message).toMatch(/^failed at SafetyBackup/);
      expect(conditionOf(r, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
      expect((await bk.get('r-unsafe-safety')).status?.phase).toBe('Failed');
      expectSameContent(await data.contentOfPod(master), before);
      expect((await data.replicationOf(master)).master_replid).toBe(replid);
    } finally {
      await rdc.apply('cache', { ...spec, backup: { store: storeSpec() } });
    }
  });

  it('verifyFirst: false reads the object once, checked while it streams: a changed one never reaches the master whole, a good one loads', async () => {
    // b2 is the object changed in the store in the test before.
    const master = await data.master();
    const before = await data.contentOfPod(master);
    await rs.create('r2-streamed', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b2' } },
      safetyBackup: false,
      verifyFirst: false,
    });
    const failed = await rs.ended('r2-streamed', 'Failed');
    expect(failed.status?.error?.reason).toBe('ChecksumMismatch');
    // Found while it streamed, not before: and still the master kept its data.
    expect(conditionOf(failed, 'Completed')?.message).toMatch(/^failed at Restoring/);
    expect(conditionOf(failed, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expectSameContent(await data.contentOfPod(master), before);
    await expect
      .poll(async () => (await eventNotes(b, ns, 'r2-streamed')).join('\n'), EVENTS_RECORDED)
      .toMatch(/RDB header checked \(format \d+.*verifyFirst is false/);

    const b5 = await backupNow('b5');
    const b5Content = await contentOfBackup(b5);
    await change('five');
    await rs.create('r5-streamed', {
      cluster: { name: 'cache' },
      source: { backup: { name: 'b5' } },
      safetyBackup: false,
      verifyFirst: false,
    });
    const r5 = await rs.ended('r5-streamed', 'Completed');
    expect(r5.status?.keys).toBe(b5Content.values.size);
    await expectCluster(b5Content);
  });

  it('latest: true restores the newest Completed Backup of the cluster, never a safety backup', async () => {
    const b3 = await backupNow('b3');
    const b3Content = await contentOfBackup(b3);
    await change('three');
    await rs.create('r3', { cluster: { name: 'cache' }, source: { latest: true } });
    const r3 = await rs.ended('r3', 'Completed');
    expect(r3.status?.source).toBe('backup b3 (latest)');
    await expectCluster(b3Content);
    // r3's safety backup is now the newest Completed Backup of the cluster; latest still means b3.
    const safety = await bk.get('r3-safety');
    expect(new Date(safety.status?.completedAt ?? 0).getTime()).toBeGreaterThan(
      new Date(b3.status?.completedAt ?? 0).getTime(),
    );
    await rs.create('r4', { cluster: { name: 'cache' }, source: { latest: true }, safetyBackup: false });
    const r4 = await rs.ended('r4', 'Completed');
    expect(r4.status?.source).toBe('backup b3 (latest)');
    expect(r4.status?.safetyBackup).toBeUndefined();
  });

  it('restores a raw S3 key by its manifest, and refuses an RDB format the cluster cannot load before touching it', async () => {
    const b1 = await bk.get('b1');
    await rs.create('r5', {
      cluster: { name: 'cache' },
      source: { s3: { store: storeSpec(), key: keyOf(b1.status?.location ?? '', s3.bucket) } },
      safetyBackup: false,
    });
    const r5 = await rs.ended('r5', 'Completed');
    expect(r5.status?.source).toBe(b1.status?.location);
    await expectCluster(b1Content);

    // An RDB of format 11 (Redis 7.2) for a Redis 7.0 cluster, with a valid manifest.
    const k = await putForeign('v11', 'REDIS0011', { product: 'redis', version: '7.2.4' });
    const master = await data.master();
    const replid = (await data.replicationOf(master)).master_replid;
    await rs.create('r6', {
      cluster: { name: 'cache' },
      source: { s3: { store: plainStore(), key: k } },
    });
    const r6 = await rs.ended('r6', 'Failed');
    expect(r6.status?.error?.reason).toBe('RdbVersionUnsupported');
    expect(r6.status?.error?.message).toMatch(
      /RDB version 11 cannot be loaded by Redis 7\.0\.\d+, which loads RDB versions up to 10/,
    );
    expect(conditionOf(r6, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expect((await data.replicationOf(master)).master_replid).toBe(replid);
    await expect(bk.get('r6-safety')).rejects.toMatchObject({ code: 404 });
  });

  it('takes one restore of a cluster at a time: the later of two is refused with the reason', async () => {
    await Promise.all([
      rs.create('r7a', {
        cluster: { name: 'cache' },
        source: { backup: { name: 'b1' } },
        safetyBackup: false,
      }),
      rs.create('r7b', {
        cluster: { name: 'cache' },
        source: { backup: { name: 'b3' } },
        safetyBackup: false,
      }),
    ]);
    const [a, bb] = await Promise.all([rs.get('r7a'), rs.get('r7b')]);
    const created = (x: typeof a) => `${x.metadata.creationTimestamp}/${x.metadata.name}`;
    const [first, second] = created(a) <= created(bb) ? ['r7a', 'r7b'] : ['r7b', 'r7a'];
    await rs.ended(first, 'Completed');
    const refused = await rs.ended(second, 'Failed');
    expect(refused.status?.error?.reason).toBe('RestoreInProgress');
    expect(refused.status?.error?.message).toContain(`Restore ${first}`);
    expect(conditionOf(refused, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
  });

  /** The notes of a Restore's Loading Events: which mode, and why. */
  const loading = async (name: string) =>
    (await eventNotes(b, ns, name)).filter((n) => n.startsWith('Loading:')).join('\n');
  const cloneData = clusterData(b, () => ns, 'clone');
  const expectClone = async (expected: Content) => {
    for (const pod of await cloneData.pods()) {
      try {
        expectSameContent(await cloneData.contentOfPod(pod), expected);
      } catch (error) {
        throw new Error(`${pod}: ${(error as Error).message}`);
      }
    }
  };

  it('bootstrap.fromBackup: a new cluster is Ready only with the backup data, on every instance', async () => {
    // A memory limit, which the in-place restore below weighs (the test bed does not enforce it),
    // and a maxmemory with an eviction policy (which Redis does): b1 fits under both.
    await rdc.apply('clone', {
      version: '7.0',
      replicas: 3,
      resources: { limits: { memory: '1Gi' } },
      config: { maxmemory: '64mb', 'maxmemory-policy': 'allkeys-lru' },
      bootstrap: { fromBackup: { name: 'b1' } },
    });
    const clone = await rdc.ready('clone', 240_000);
    expect(clone.status?.bootstrap).toMatchObject({ restore: 'clone-bootstrap', reason: 'Restored' });
    const r = await rs.get('clone-bootstrap');
    expect(r.status).toMatchObject({ phase: 'Completed', source: 'backup b1', keys: b1Content.values.size });
    // A new cluster has nothing to keep: no safety backup, and its empty master parses the RDB
    // from the socket (an in-place restore into a master without a memory limit receives it to
    // disk first: r1).
    expect(r.status?.safetyBackup).toBeUndefined();
    await expect
      .poll(() => loading('clone-bootstrap'), EVENTS_RECORDED)
      .toContain('parsed from the socket: the master holds no keys');
    expect(await loading('r1')).toContain(
      'received to disk first: the master holds data and its container has no memory limit',
    );
    // The status says the same, for `kubectl get -o yaml`.
    expect(r.status?.load).toEqual({
      of: 'restore',
      mode: 'memory',
      message: 'parsed from the socket: the master holds no keys',
    });
    expect((await rs.get('r1')).status?.load).toMatchObject({
      of: 'restore',
      mode: 'disk',
      message: expect.stringMatching(/^received to disk first: the master holds data/),
    });
    await expectClone(b1Content);
  });

  it("in place, parses the RDB beside the current data when the master's memory limit holds both, and refuses a data set that does not fit it or its maxmemory", async () => {
    const c = await cloneData.clientOf(await cloneData.master());
    try {
      await fillRandom(c, 4, 'clone-own');
      expect(Number(await c.call('WAIT', 2, 10_000))).toBe(2);
    } finally {
      c.close();
    }
    await rs.create('r-memory', {
      cluster: { name: 'clone' },
      source: { backup: { name: 'b1' } },
      safetyBackup: false,
    });
    await rs.ended('r-memory', 'Completed');
    await rdc.ready('clone');
    await expectClone(b1Content);
    // b1 recorded what its data set took; the clone's master has a 1 GiB limit and a few MiB in use.
    await expect
      .poll(() => loading('r-memory'), EVENTS_RECORDED)
      .toMatch(
        /parsed from the socket beside the current data: \d+ MiB in use \+ \d+ MiB to load \(x1\.5\) fit in 90 % of the 1024 MiB memory limit/,
      );
    expect((await rs.get('r-memory')).status?.load).toMatchObject({
      of: 'restore',
      mode: 'memory',
      message: expect.stringMatching(/^parsed from the socket beside the current data: \d+ MiB in use/),
    });

    // A data set that alone takes more than 90 % of the limit is refused before anything is read
    // (this object no longer matches its checksum: read first, it would fail ChecksumMismatch) or
    // touched: loaded, it would get the master killed for memory, again at each restart.
    const master = await cloneData.master();
    const replid = (await cloneData.replicationOf(master)).master_replid;
    const k = await putForeign(
      'huge',
      'REDIS0010',
      {
        product: 'redis',
        version: '7.0.15',
        usedMemory: 2 ** 30,
      },
      { changedAfter: true },
    );
    await rs.create('r-huge', {
      cluster: { name: 'clone' },
      source: { s3: { store: plainStore(), key: k } },
    });
    const huge = await rs.ended('r-huge', 'Failed');
    expect(huge.status?.error).toMatchObject({ reason: 'InsufficientMemory' });
    expect(huge.status?.error?.message).toMatch(
      /took 1024 MiB of memory .* the master's 1024 MiB memory limit/,
    );
    expect(conditionOf(huge, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expect((await cloneData.replicationOf(master)).master_replid).toBe(replid);
    await expect(bk.get('r-huge-safety')).rejects.toMatchObject({ code: 404 });

    // One that fits the memory limit but not the master's maxmemory: loaded, it would be evicted
    // (allkeys-lru) as soon as the master served again. Refused the same way, nothing read.
    const over = await putForeign(
      'over-maxmemory',
      'REDIS0010',
      // Kept under a larger maxmemory where it was taken: over this master's, it is data Redis would evict.
      {
        product: 'redis',
        version: '7.0.15',
        usedMemory: 82 * 2 ** 20,
        maxmemoryUsage: 80 * 2 ** 20,
        maxmemory: 128 * 2 ** 20,
      },
      { changedAfter: true },
    );
    await rs.create('r-over', {
      cluster: { name: 'clone' },
      source: { s3: { store: plainStore(), key: over } },
    });
    const refused = await rs.ended('r-over', 'Failed');
    expect(refused.status?.error).toMatchObject({ reason: 'ExceedsMaxmemory' });
    expect(refused.status?.error?.message).toMatch(
      /counted 80 MiB against maxmemory .* maxmemory of 64 MiB: with maxmemory-policy allkeys-lru Redis would evict keys of the restored data .* at least 81mb/,
    );
    expect(conditionOf(refused, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expect((await cloneData.replicationOf(master)).master_replid).toBe(replid);
    await expect(bk.get('r-over-safety')).rejects.toMatchObject({ code: 404 });
    await expectClone(b1Content);
  });

  it('parsed from the socket, takes no crafted RDB that ends early: the end of the transfer is the EOF mark, sent after the checksum matched', async () => {
    // A whole, valid RDB (other keys), then filler, stored where the manifest says a different
    // SHA-256: verifyFirst: false lets it stream. Redis 7 takes a data set parsed from the socket
    // once the RDB's own end is parsed; with the length announced instead of the mark it would
    // have swapped this one in, and the checksum would fail only after.
    const forged = Buffer.concat([await randomRdb(servers, 1), Buffer.alloc(512 * 1024)]);
    const k = await putForeign(
      'ends-early',
      'REDIS0010',
      { product: 'redis', version: '7.0.15', usedMemory: 4 * 1024 * 1024 },
      { changedAfter: true, rdb: forged },
    );
    await rs.create('r-early', {
      cluster: { name: 'clone' },
      source: { s3: { store: plainStore(), key: k } },
      safetyBackup: false,
      verifyFirst: false,
    });
    const r = await rs.ended('r-early', 'Failed');
    expect(r.status?.load).toMatchObject({ of: 'restore', mode: 'memory' });
    expect(r.status?.error?.reason).toBe('ChecksumMismatch');
    expect(conditionOf(r, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    await rdc.ready('clone');
    await expectClone(b1Content);
  });

  it("rolls back a load that the master's maxmemory would evict, found while it is still a replica", async () => {
    // 72 MiB from a server of its own, under a manifest from before the memory figures: nothing to
    // weigh before the load. Loaded, the data set counts more than clone's maxmemory of 64 MiB.
    const k = await putForeign(
      'evicted',
      'REDIS',
      { product: 'redis', version: '7.0.15' },
      { rdb: await randomRdb(servers, 72) },
    );
    await rs.create('r-evict', {
      cluster: { name: 'clone' },
      source: { s3: { store: plainStore(), key: k } },
    });
    const r = await rs.ended('r-evict', 'RolledBack', 180_000);
    expect(r.status?.error?.reason).toBe('ExceedsMaxmemory');
    expect(r.status?.error?.message).toMatch(
      /the loaded data set counts \d+ MiB against maxmemory, more than the master's maxmemory of 64 MiB: with maxmemory-policy allkeys-lru/,
    );
    expect(conditionOf(r, 'ClusterData')).toMatchObject({ status: 'False', reason: 'RolledBack' });
    // The latest load was the rollback's.
    expect(r.status?.load).toMatchObject({ of: 'rollback' });
    await rdc.ready('clone');
    await expectClone(b1Content);
  });

  it('a Backup deleted while a restore loads from it is kept for that restore, refused to new ones, and goes right after', async () => {
    const doomed = await backupNow('b-doomed');
    const objectKey = keyOf(doomed.status?.location ?? '', s3.bucket);
    await rs.create('r-doomed', { cluster: { name: 'cache' }, source: { backup: { name: 'b-doomed' } } });
    // Deleted at once, most likely before r-doomed's first run: named before the deletion, it loads.
    await bk.delete('b-doomed');
    await expect.poll(() => eventReasons(b, ns, 'b-doomed'), EVENTS_RECORDED).toContain('InUse');
    // A restore made after the deletion (times have seconds only: a later second) is refused:
    // the object goes once r-doomed has finished.
    const deleted = new Date((await bk.get('b-doomed')).metadata.deletionTimestamp ?? 0).getTime();
    await sleep(Math.max(0, deleted + 1100 - Date.now()));
    await rs.create('r-doomed-late', {
      cluster: { name: 'clone' },
      source: { backup: { name: 'b-doomed' } },
      safetyBackup: false,
    });
    const late = await rs.ended('r-doomed-late', 'Failed');
    expect(late.status?.error?.reason).toBe('BackupDeleting');
    expect(conditionOf(late, 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    await rs.ended('r-doomed', 'Completed');
    // The backup function would look again only after 10 minutes: the Restore's outcome lets go.
    await bk.gone('b-doomed', 60_000);
    expect(await store.head(objectKey)).toBeUndefined();
  });

  it('a Backup a new cluster is to start from is kept while the cluster waits to load it, before any Restore names it', async () => {
    const boot = await backupNow('b-boot');
    const objectKey = keyOf(boot.status?.location ?? '', s3.bucket);
    // Its pods cannot run: the master never serves, so the load's Restore is never made.
    await rdc.apply('waits', {
      version: '7.0',
      replicas: 1,
      image: 'example.com/no-such-image:1',
      bootstrap: { fromBackup: { name: 'b-boot' } },
    });
    await bk.delete('b-boot');
    await expect.poll(() => eventReasons(b, ns, 'b-boot'), EVENTS_RECORDED).toContain('InUse');
    expect((await bk.get('b-boot')).metadata.deletionTimestamp).toBeTruthy();
    expect(await store.head(objectKey)).toBeDefined();
    await b.custom.deleteNamespacedCustomObject({
      ...TIDEWAY_KINDS.RedisCluster,
      namespace: ns,
      name: 'waits',
    });
  });

  it('the same through the signed webhook: POST …/restore {"latest":true} → 202 → Completed; the same webhook-id again creates nothing', async () => {
    const whsec = newSecret();
    await b.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'tideway-webhook' }, stringData: { secret: whsec } },
    });
    const hook = await startWebhook(b, { namespace: ns });
    try {
      const latest = await backupNow('hook-source');
      const expected = await contentOfBackup(latest);
      await change('before-webhook');
      const path = `/v1/namespaces/${ns}/redisclusters/cache/restore`;
      const body = JSON.stringify({ latest: true });
      const count = async () =>
        (
          (await b.custom.listNamespacedCustomObject({
            group: 'tideway.dev',
            version: 'v1alpha1',
            plural: 'restores',
            namespace: ns,
          })) as { items: unknown[] }
        ).items.length;
      const initial = await count();
      const first = await hook.signed('POST', path, whsec, { body, id: 'msg_chain_restore' });
      expect(first.status, first.text).toBe(202);
      const name = (first.json as { restore: { name: string } }).restore.name;
      // While it runs (a safety backup alone takes seconds), a second restore is refused, and
      // nothing is created.
      const second = await hook.signed('POST', path, whsec, { body, id: 'msg_chain_restore_2' });
      expect(second.status, second.text).toBe(409);
      expect(second.json).toMatchObject({ error: { code: 'RestoreInProgress' } });
      expect((second.json as { error: { message: string } }).error.message).toContain(`${name} (`);
      expect(await count()).toBe(initial + 1);
      const done = await rs.ended(name, 'Completed');
      expect(done.status?.source).toBe('backup hook-source (latest)');
      expect(done.metadata.annotations ?? {}).toHaveProperty(['tideway.dev/webhook-id']);
      await expectCluster(expected);

      const before = await count();
      const again = await hook.signed('POST', path, whsec, { body, id: 'msg_chain_restore' });
      expect(again.status, again.text).toBeLessThan(300);
      expect((again.json as { restore: { name: string } }).restore.name).toBe(name);
      expect(await count()).toBe(before);
    } finally {
      await hook.stop();
    }
  });

  it('runs with least privilege: creates Backups but deletes none, changes no pod, spec or Secret', async () => {
    const authz = b.kc.makeApiClient(AuthorizationV1Api);
    const can = async (verb: string, group: string, resource: string, subresource?: string) =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${SYSTEM_NAMESPACE}:tideway-restore`,
              groups: [
                'system:serviceaccounts',
                `system:serviceaccounts:${SYSTEM_NAMESPACE}`,
                'system:authenticated',
              ],
              resourceAttributes: {
                verb,
                group,
                resource,
                namespace: ns,
                ...(subresource ? { subresource } : {}),
              },
            },
          },
        })
      ).status?.allowed === true;
    for (const [verb, group, resource, sub] of [
      ['create', 'tideway.dev', 'backups'],
      ['update', 'tideway.dev', 'redisclusters', 'status'],
      ['update', 'tideway.dev', 'restores', 'status'],
      ['patch', 'tideway.dev', 'restores'],
      ['get', '', 'secrets'],
    ] as const)
      expect(await can(verb, group, resource, sub), `${verb} ${resource}`).toBe(true);
    for (const [verb, group, resource] of [
      ['delete', 'tideway.dev', 'backups'],
      ['update', 'tideway.dev', 'backups'],
      ['update', 'tideway.dev', 'redisclusters'],
      ['patch', 'tideway.dev', 'redisclusters'],
      ['create', 'tideway.dev', 'restores'],
      ['delete', 'tideway.dev', 'restores'],
      ['list', '', 'secrets'],
      ['create', '', 'secrets'],
      ['patch', '', 'pods'],
      ['delete', '', 'pods'],
      ['patch', 'apps', 'statefulsets'],
    ] as const)
      expect(await can(verb, group, resource), `${verb} ${resource}`).toBe(false);
  });

  it("a Backup of another cluster with the safety backup's annotations copied: its outcome runs no Restore, its own safety backup's does", async () => {
    const source = await backupNow('copied-source');
    const expected = await contentOfBackup(source);
    await change('before-copied');
    const safety = await waitingOnSafety('r-copied', 'copied-source');
    // While the test holds the cluster's lock no run of r-copied's own goes: a run that moves it
    // now is one beside them.
    const release = await holdLock(b, { kind: 'RedisCluster', namespace: ns, name: 'cache' });
    try {
      await markFinished('r-copied-safety');
      // Anyone who may create Backups can copy its annotations onto a Backup of another cluster.
      const annotations = {
        [MADE_BY.restore]: safety.metadata.annotations?.[MADE_BY.restore] ?? '',
        [MADE_BY.uid]: safety.metadata.annotations?.[MADE_BY.uid] ?? '',
      };
      expect(annotations[MADE_BY.uid]).toBe((await rs.get('r-copied')).metadata.uid);
      const copied = (await b.custom.createNamespacedCustomObject({
        ...TIDEWAY_KINDS.Backup,
        namespace: ns,
        body: {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'Backup',
          metadata: { name: 'copied-annotations', annotations },
          spec: { cluster: { name: 'other' } },
        },
      })) as Backup;
      // Its outcome, as the backup function publishes one (its own builder).
      expect(
        await publishEvent(
          b,
          backupOutcome(
            { backup: copied, key: { namespace: ns, name: 'copied-annotations' } },
            'tideway/backup',
            'completed',
            { location: `s3://${s3.bucket}/${prefix}/no-such-object`, size: 0 },
            new Date(),
          ),
        ),
      ).toBeGreaterThan(0);
      // A run of r-copied would go on to load at once (checked by taking the check out).
      await sleep(5000);
      expect((await rs.get('r-copied')).status?.phase).toBe('SafetyBackup');
      expect(await eventReasons(b, ns, 'r-copied')).not.toContain('SafetyBackupCompleted');
      await release();

      // The backup function back: it meets its finished safety backup and publishes that
      // outcome, which moves the Restore on (it would look again only after 10 minutes).
      await startBackupFn();
      const done = await rs.ended('r-copied', 'Completed', 90_000);
      expect(done.status?.safetyBackup).toBe('r-copied-safety');
      await expectCluster(expected);
    } finally {
      await release(); // a no-op once released
      await startBackupFn(); // likewise, once started
    }
  });

  it('an outcome lost: the Restore looks at its safety backup again after TIDEWAY_RESTORE_SAFETY_RECHECK_MS and goes on', async () => {
    const source = await backupNow('lost-source');
    const expected = await contentOfBackup(source);
    await change('before-lost');
    await startRestoreFn(2000);
    try {
      await waitingOnSafety('r-lost', 'lost-source');
      await markFinished('r-lost-safety');
      // The backup function stays stopped: no outcome comes, only the restore function's own looks.
      const done = await rs.ended('r-lost', 'Completed', 60_000);
      expect(done.status?.safetyBackup).toBe('r-lost-safety');
      await expectCluster(expected);
    } finally {
      await startRestoreFn();
      await startBackupFn();
    }
  });
});
