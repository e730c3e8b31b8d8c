import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { AuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreOutcome } from '../../functions/restore/report.ts';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import type { Restore } from '../../shared/api/generated.ts';
import { zManifest } from '../../shared/backup/manifest.ts';
import { connectBus } from '../../shared/bus/connect.ts';
import { fromMessage } from '../../shared/events/nats-binding.ts';
import { STREAM, subjectFor } from '../../shared/events/subjects.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { holdLock, publishEvent } from '../support/bus.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  EVENTS_RECORDED,
  eventNotes,
  eventReasons,
  ipOf,
  redisClusters,
  refusals,
  serverlessWith,
  startFunction,
} from '../support/redis.ts';
import { backups, bedStore, keyOf, restoredContent } from './support/backups.ts';
import { contentOf, expectSameContent, fillRandom, populate } from './support/dataset.ts';
import { binaryClient } from './support/resp.ts';
import type { TestServer } from './support/servers.ts';

const MiB = 1024 * 1024;

/**
 * Backups end to end on the test bed: the product's functions (watcher, reconcile, health and
 * backup, each as its own ServiceAccount), a real 3-instance RedisCluster, the real S3 server.
 */
describe('backup', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  const workers: Worker[] = [];
  const backupWorkers: Worker[] = [];
  // A bandwidth limit, so that a backup lasts long enough to be interfered with.
  const backupEnv = {
    TIDEWAY_BACKUP_ATTEMPTS: '3',
    TIDEWAY_BACKUP_MAX_BYTES_PER_SECOND: String(8 * MiB),
    TIDEWAY_BACKUP_IN_USE_RECHECK_MS: '1000',
  };
  const servers: TestServer[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const { s3 } = b.info;
  const store = bedStore(b);
  const key = randomBytes(32);
  let prefix = '';

  const secret = (name: string, data: Record<string, Buffer | string>) =>
    b.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name },
        data: Object.fromEntries(
          Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
      },
    });
  const storeSpec = (o: Record<string, unknown> = {}, s3o: Record<string, unknown> = {}) => ({
    s3: {
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      prefix,
      credentialsSecret: { name: 's3-creds' },
      ...s3o,
    },
    compression: 'zstd',
    encryption: { secretName: 'backup-key' },
    ...o,
  });
  /**
   * The content of one instance. A backup is compared with the instance it was taken from: a
   * replica holds the master's data, but its stream consumers' seen-times are its own.
   */
  const contentOfPod = async (pod: string) => {
    const p = (await rdc.pods('cache')).find((x) => x.metadata?.name === pod);
    const c = await binaryClient({ host: ipOf(p), port: 6379, password: await rdc.password('cache') });
    try {
      return await contentOf(c);
    } finally {
      c.close();
    }
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'backup');
    prefix = `e2e/${ns}`;
    dir = await mkdtemp(join(tmpdir(), 'twbed-backup-e2e-'));
    const id = `backup-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    workers.push(await startFunction(b, ns, id, 'reconcile', { TIDEWAY_REPLICA: '0' }));
    workers.push(await startFunction(b, ns, id, 'health', { TIDEWAY_REPLICA: '0' }));
    for (const r of ['0', '1']) {
      const w = await startFunction(b, ns, id, 'backup', { ...backupEnv, TIDEWAY_REPLICA: r });
      workers.push(w);
      backupWorkers.push(w);
    }
    await secret('s3-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('backup-key', { key });
    await rdc.apply('cache', { version: '7.0', replicas: 3, backup: { store: storeSpec() } });
    await rdc.ready('cache');
    const rc = await rdc.get('cache');
    const master = (await rdc.pods('cache')).find((p) => p.metadata?.name === rc.status?.master);
    const c = await binaryClient({ host: ipOf(master), port: 6379, password: await rdc.password('cache') });
    await populate(c);
    await fillRandom(c, 32);
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

  it('backs up from a replica: status, manifest, SHA-256, Events, the CloudEvent; the object restores to the same content', async () => {
    await bk.create('b1', { cluster: { name: 'cache' } });
    // Progress while it runs (the bandwidth limit makes it last ~5 s).
    const running = await until(
      'progress',
      async () => {
        const s = (await bk.get('b1')).status;
        if (s?.phase === 'Completed') throw new Error('completed before any progress was seen');
        return (s?.progress?.bytes ?? 0) > 0 ? s : undefined;
      },
      60_000,
      100,
    );
    expect(running).toMatchObject({ phase: 'Running', attempts: 1 });
    const done = await bk.phase('b1', 'Completed');
    const s = done.status ?? {};
    const rc = await rdc.get('cache');
    expect(s.source).not.toBe(rc.status?.master);
    expect(s.source).toMatch(/^cache-[0-2]$/);
    expect(s.location).toMatch(
      new RegExp(`^s3://${s3.bucket}/${prefix}/${ns}/cache/b1-[0-9a-f]{8}\\.rdb\\.zst\\.enc$`),
    );
    expect(s.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(s.redisVersion).toMatch(/^7\.0\.\d+$/);
    expect(s.duration).toMatch(/^\d+\.\ds$/);
    // When the data was taken: after the run started, before it ended (what `latest` orders by).
    const [started, taken, completed] = [s.startedAt, s.takenAt, s.completedAt].map((t) =>
      Date.parse(t ?? ''),
    );
    expect(taken).toBeGreaterThanOrEqual(started ?? Number.NaN);
    expect(taken).toBeLessThanOrEqual(completed ?? Number.NaN);
    expect(s.rdbSize).toBeGreaterThan(32 * MiB);
    expect(s.progress).toEqual({ bytes: s.rdbSize, percent: 100 });
    expect(findCondition(s.conditions as never, 'Completed')).toMatchObject({
      status: 'True',
      reason: 'Completed',
    });
    // The stored bytes are what status says.
    const objectKey = keyOf(s.location ?? '', s3.bucket);
    expect((await store.head(objectKey))?.size).toBe(s.size);
    const raw = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const body = (await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: objectKey }))).Body;
    const hash = createHash('sha256');
    for await (const c of body as AsyncIterable<Buffer>) hash.update(c);
    expect(hash.digest('hex')).toBe(s.sha256);
    // The manifest beside it.
    const manifest = zManifest.parse(
      JSON.parse(String(await store.get(objectKey.replace(/\.rdb\.zst\.enc$/, '.manifest.json'), 65536))),
    );
    expect(manifest).toMatchObject({
      cluster: { namespace: ns, name: 'cache' },
      backup: { name: 'b1', uid: done.metadata.uid },
      redis: { product: 'redis', version: s.redisVersion },
      size: s.size,
      rdbSize: s.rdbSize,
      sha256: s.sha256,
      compression: 'zstd',
      encryption: { format: 'tideway-aes-256-gcm-chunked-v1', secretName: 'backup-key' },
      source: s.source,
    });
    expect(manifest.takenAt?.slice(0, 19)).toBe(s.takenAt?.slice(0, 19)); // status: to the second
    // What the data set took in the source's memory, and what of it counted against maxmemory
    // (a restore weighs them against its target's memory limit and maxmemory).
    const { usedMemory = 0, maxmemoryUsage = 0 } = manifest.redis ?? {};
    expect(maxmemoryUsage).toBeGreaterThan(0);
    expect(maxmemoryUsage).toBeLessThanOrEqual(usedMemory);
    expect(manifest.redis?.maxmemory).toBe(0); // cache has no maxmemory
    // Decrypted and decompressed, a valid RDB with the cluster's content.
    expectSameContent(
      await restoredContent(b, done, { dir, compression: 'zstd', encryptionKey: key, servers }),
      await contentOfPod(s.source ?? ''),
    );
    await expect.poll(() => eventReasons(b, ns, 'b1'), EVENTS_RECORDED).toContain('Completed');
    await expect.poll(() => eventReasons(b, ns, 'cache'), EVENTS_RECORDED).toContain('BackupCompleted');
    const bus = await connectBus(b.info.natsUrl, 'test-backup');
    try {
      const msg = await bus.jsm.streams.getMessage(STREAM, {
        last_by_subj: subjectFor('dev.tideway.backup.completed', {
          kind: 'Backup',
          namespace: ns,
          name: 'b1',
        }),
      });
      const ce = fromMessage(msg?.header, msg?.data ?? new Uint8Array());
      expect(ce.type).toBe('dev.tideway.backup.completed');
      // As the watcher's events of a Backup: a handler's lockKey reads both (the restore's does).
      expect(ce).toMatchObject({ kind: 'Backup', cluster: 'cache', clusterkind: 'RedisCluster' });
      expect(ce.data).toMatchObject({
        cluster: 'cache',
        location: s.location,
        sha256: s.sha256,
        size: s.size,
      });
    } finally {
      await bus.close();
    }
  });

  it('completes from another instance when its source pod is deleted mid-backup', async () => {
    await bk.create('b2', { cluster: { name: 'cache' } });
    const running = await until(
      'b2 streaming',
      async () => {
        const s = (await bk.get('b2')).status;
        if (s?.phase === 'Completed') throw new Error('completed before the source could be deleted');
        return (s?.progress?.bytes ?? 0) > 4 * MiB && s?.source ? s : undefined;
      },
      60_000,
      100,
    );
    const lost = running.source ?? '';
    // Frozen first (the server and its fork: the container's process group), so the transfer is
    // cut mid-stream however long the deletion takes to reach the process: a loaded node agent
    // took seconds, and the rest of the RDB went through before it.
    const pid = (await b.faults.containerPids(ns, lost)).redis;
    if (pid === undefined) throw new Error(`${lost} has no running redis container`);
    process.kill(-pid, 'SIGSTOP');
    // At once: a graceful stop would let the server finish the transfer first (shutdown-timeout).
    await b.core.deleteNamespacedPod({ namespace: ns, name: lost, gracePeriodSeconds: 0 });
    const done = await bk.phase('b2', 'Completed', 180_000);
    const story = JSON.stringify({ seen: running, done: done.status, events: await eventNotes(b, ns, 'b2') });
    // Another instance: the pod that replaced the lost one starts fenced, it cannot serve a sync.
    expect(done.status?.source, story).not.toBe(lost);
    expect(done.status?.attempts, story).toBe(1);
    await expect.poll(() => eventReasons(b, ns, 'b2'), EVENTS_RECORDED).toContain('SourceLost');
    expectSameContent(
      await restoredContent(b, done, { dir, compression: 'zstd', encryptionKey: key, servers }),
      await contentOfPod(done.status?.source ?? ''),
    );
    await rdc.ready('cache');
  });

  it('takes the snapshot from the master when told so', async () => {
    await bk.create('from-master', {
      cluster: { name: 'cache' },
      source: 'master',
      store: storeSpec({ compression: 'gzip', encryption: { secretName: '' } }),
    });
    const done = await bk.phase('from-master', 'Completed');
    expect(done.status?.source).toBe((await rdc.get('cache')).status?.master);
    expect(done.status?.location).toMatch(/\.rdb\.gz$/);
    expectSameContent(
      await restoredContent(b, done, { dir, compression: 'gzip', servers }),
      await contentOfPod(done.status?.source ?? ''),
    );
  });

  it('deleting a Backup deletes its object and manifest; with Retain they stay', async () => {
    const gone = await bk.get('b1');
    const goneKey = keyOf(gone.status?.location ?? '', s3.bucket);
    expect(gone.metadata.finalizers).toContain('tideway.dev/backup-object');
    await bk.delete('b1');
    await bk.gone('b1');
    expect(await store.head(goneKey)).toBeUndefined();
    expect(await store.head(goneKey.replace(/\.rdb\.zst\.enc$/, '.manifest.json'))).toBeUndefined();

    await bk.create('kept', { cluster: { name: 'cache' }, deletionPolicy: 'Retain' });
    const kept = await bk.phase('kept', 'Completed');
    const keptKey = keyOf(kept.status?.location ?? '', s3.bucket);
    // Parts an attempt of it left (a crash) are not kept with the object: they go with the Backup.
    const raw = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await raw.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: keptKey }));
    expect(await store.unfinished(keptKey)).toEqual([keptKey]);
    await bk.delete('kept');
    await bk.gone('kept');
    expect(await store.unfinished(keptKey)).toEqual([]);
    expect((await store.head(keptKey))?.size).toBe(kept.status?.size);
    expect(await store.head(keptKey.replace(/\.rdb\.zst\.enc$/, '.manifest.json'))).toBeDefined();
    await store.delete(keptKey);
  });

  it('deleting a Backup needs no encryption key, and waits for a store that does not answer', async () => {
    await secret('retired-key', { key: randomBytes(32) });
    await bk.create('keyless', {
      cluster: { name: 'cache' },
      store: storeSpec({ encryption: { secretName: 'retired-key' } }),
    });
    const made = await bk.phase('keyless', 'Completed');
    const objectKey = keyOf(made.status?.location ?? '', s3.bucket);
    expect(objectKey).toMatch(/\.enc$/);
    // The key retired: the object cannot be read any more, and can still be deleted.
    await b.core.deleteNamespacedSecret({ namespace: ns, name: 'retired-key' });
    await b.faults.component('s3', 'stop');
    try {
      await bk.delete('keyless');
      // Looked at again every 5 s while S3 is away; the Backup, and so its object's name, stays.
      await sleep(8000);
      const waiting = await bk.get('keyless').catch(() => undefined);
      expect(waiting?.metadata.deletionTimestamp, 'finalized while the store was away').toBeDefined();
    } finally {
      await b.faults.component('s3', 'start');
    }
    await bk.gone('keyless', 60_000);
    expect(await store.head(objectKey)).toBeUndefined();
    expect(await store.head(objectKey.replace(/\.rdb\.zst\.enc$/, '.manifest.json'))).toBeUndefined();
    expect(await eventReasons(b, ns, 'keyless')).not.toContain('ObjectNotDeleted');
  });

  it('a deleted Backup that an unfinished Restore uses is kept, object and all, until the Restore finishes', async () => {
    await bk.create('in-use', { cluster: { name: 'cache' } });
    const made = await bk.phase('in-use', 'Completed');
    const key = keyOf(made.status?.location ?? '', s3.bucket);
    // No restore function runs here: the Restore stays unfinished until the test ends it.
    const RESTORE = TIDEWAY_KINDS.Restore;
    await b.custom.createNamespacedCustomObject({
      ...RESTORE,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Restore',
        metadata: { name: 'uses-it' },
        spec: { cluster: { name: 'cache' }, source: { backup: { name: 'in-use' } } },
      },
    });
    await bk.delete('in-use');
    await expect.poll(() => eventReasons(b, ns, 'in-use'), EVENTS_RECORDED).toContain('InUse');
    await new Promise((r) => setTimeout(r, 3000)); // looked at again every second here
    expect((await bk.get('in-use')).metadata.deletionTimestamp).toBeDefined();
    expect(await store.head(key)).toBeDefined();
    const r = (await b.custom.getNamespacedCustomObject({
      ...RESTORE,
      namespace: ns,
      name: 'uses-it',
    })) as object;
    await b.custom.replaceNamespacedCustomObjectStatus({
      ...RESTORE,
      namespace: ns,
      name: 'uses-it',
      body: { ...r, status: { phase: 'Failed' } },
    });
    await bk.gone('in-use');
    expect(await store.head(key)).toBeUndefined();
  });

  it("a Restore's outcome lets go of a deleted Backup it kept, but never while a run holds the Backup's lock", async () => {
    await bk.create('held', { cluster: { name: 'cache' } });
    const made = await bk.phase('held', 'Completed');
    const objectKey = keyOf(made.status?.location ?? '', s3.bucket);
    const RESTORE = TIDEWAY_KINDS.Restore;
    const restore = (await b.custom.createNamespacedCustomObject({
      ...RESTORE,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Restore',
        metadata: { name: 'uses-held' },
        spec: { cluster: { name: 'cache' }, source: { backup: { name: 'held' } } },
      },
    })) as Restore;
    await bk.delete('held');
    await expect.poll(() => eventReasons(b, ns, 'held'), EVENTS_RECORDED).toContain('InUse');
    // Held as the Backup's own runs hold it (its looks, every second here, wait meanwhile).
    const release = await holdLock(b, { kind: 'Backup', namespace: ns, name: 'held' });
    try {
      // The Restore ends, and says so on the bus as the restore function does (no restore
      // function runs here).
      await b.custom.replaceNamespacedCustomObjectStatus({
        ...RESTORE,
        namespace: ns,
        name: 'uses-held',
        body: { ...restore, status: { phase: 'Failed' } },
      });
      expect(
        await publishEvent(b, restoreOutcome(restore, 'tideway/restore', 'failed', {}, new Date())),
      ).toBeGreaterThan(0);
      // Taken at the outcome beside the holder, the Backup would be gone at once (checked by
      // taking the lock out of functions/backup/released.ts).
      await sleep(4000);
      const kept = await bk.get('held').catch(() => undefined);
      expect(kept?.metadata.deletionTimestamp, 'finalized while its lock was held').toBeDefined();
      expect(await store.head(objectKey)).toBeDefined();
    } finally {
      await release();
    }
    // Left to its next look.
    await bk.gone('held');
    expect(await store.head(objectKey)).toBeUndefined();
  });

  it('deleting a Backup while it streams stops it: the upload is aborted, nothing stored, never Completed', async () => {
    await bk.create('b6', { cluster: { name: 'cache' } });
    await until(
      'b6 streaming',
      async () => {
        const s = (await bk.get('b6')).status;
        if (s?.phase === 'Completed') throw new Error('completed before it could be deleted');
        return (s?.progress?.bytes ?? 0) > 4 * MiB || undefined;
      },
      60_000,
      100,
    );
    await bk.delete('b6');
    // Watched until it is gone: without the stop, the upload runs to its end (~4 s more at the
    // bench's 8 MiB/s), the Backup says Completed, and only then does the finalizer delete it.
    const phases = new Set<string>();
    await until(
      'b6 gone',
      async () => {
        const s = await bk.get('b6').then(
          (o) => o.status,
          (e: { code?: number }) => {
            if (e.code === 404) return null;
            throw e;
          },
        );
        if (s === null) return true;
        phases.add(s?.phase ?? '-');
        return undefined;
      },
      60_000,
      50,
    );
    expect([...phases]).not.toContain('Completed');
    expect(await store.unfinished(`${prefix}/${ns}/cache/b6-`)).toEqual([]);
    const raw = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const listed = await raw.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}/${ns}/cache/b6-` }),
    );
    expect(listed.Contents ?? []).toEqual([]);
    expect(await eventReasons(b, ns, 'b6')).not.toContain('Completed');
  });

  it('the backup function killed mid-upload: the work is redone, and no unfinished upload is left', async () => {
    await bk.create('b5', { cluster: { name: 'cache' } });
    await until(
      'b5 streaming',
      async () => ((await bk.get('b5')).status?.progress?.bytes ?? 0) > 12 * MiB || undefined,
      60_000,
      100,
    );
    // Every backup process dies at once (SIGKILL: nothing is aborted); a new one takes over.
    const killed = [...backupWorkers];
    await Promise.all(killed.map((w) => w.kill()));
    expect((await store.unfinished(`${prefix}/${ns}/cache/`)).length).toBeGreaterThan(0);
    const fresh = await startFunction(b, ns, `backup-${ns}`, 'backup', {
      ...backupEnv,
      TIDEWAY_REPLICA: '2',
    });
    workers.push(fresh);
    backupWorkers.splice(0, backupWorkers.length, fresh);
    const done = await bk.phase('b5', 'Completed', 180_000);
    expect(done.status?.attempts).toBe(2);
    expect(await store.unfinished(`${prefix}/${ns}/cache/`)).toEqual([]);
    expectSameContent(
      await restoredContent(b, done, { dir, compression: 'zstd', encryptionKey: key, servers }),
      await contentOfPod(done.status?.source ?? ''),
    );
  });

  it('the backup function killed mid-upload with its deliveries used up: the runtime ends the Backup Failed, and deleting it leaves no unfinished upload', async () => {
    // Deliveries of one attempt each: the redelivery after the kill is past the limit, and the
    // runtime gives up on it without a run; nothing of the Backup's own would come again.
    const oneAttempt = await serverlessWith(dir, 'backup', { maximumRetryAttempts: 1 });
    const id = `backup-${ns}`;
    await Promise.all(backupWorkers.map((w) => w.stop()));
    const first = await startFunction(
      b,
      ns,
      id,
      'backup',
      { ...backupEnv, TIDEWAY_REPLICA: '3' },
      oneAttempt,
    );
    workers.push(first);
    try {
      await bk.create('b5-given-up', { cluster: { name: 'cache' } });
      await until(
        'b5-given-up streaming',
        async () => ((await bk.get('b5-given-up')).status?.progress?.bytes ?? 0) > 12 * MiB || undefined,
        60_000,
        100,
      );
      await first.kill();
      expect((await store.unfinished(`${prefix}/${ns}/cache/`)).length).toBeGreaterThan(0);
      const next = await startFunction(
        b,
        ns,
        id,
        'backup',
        { ...backupEnv, TIDEWAY_REPLICA: '4' },
        oneAttempt,
      );
      workers.push(next);
      const failed = await bk.phase('b5-given-up', 'Failed', 120_000);
      expect(failed.status?.error).toMatchObject({ reason: 'RetriesExhausted' });
      expect(failed.status?.conditions?.find((c) => c.type === 'Completed')).toMatchObject({
        status: 'False',
        reason: 'RetriesExhausted',
      });
      // Deleting it goes through the finalizer, which aborts what the killed attempt left.
      await bk.delete('b5-given-up');
      await bk.gone('b5-given-up');
      expect(await store.unfinished(`${prefix}/${ns}/cache/`)).toEqual([]);
      await next.stop();
    } finally {
      const fresh = await Promise.all(
        ['0', '1'].map((r) => startFunction(b, ns, id, 'backup', { ...backupEnv, TIDEWAY_REPLICA: r })),
      );
      workers.push(...fresh);
      backupWorkers.splice(0, backupWorkers.length, ...fresh);
    }
  });

  it('S3 unreachable mid-backup: retried, then Failed with the reason; no object, and no parts once S3 is back', async () => {
    await bk.create('b3', { cluster: { name: 'cache' } });
    await until(
      'b3 streaming',
      async () => ((await bk.get('b3')).status?.progress?.bytes ?? 0) > 4 * MiB || undefined,
      60_000,
      100,
    );
    await b.faults.component('s3', 'stop');
    let failed: Awaited<ReturnType<typeof bk.get>>;
    try {
      failed = await bk.phase('b3', 'Failed', 120_000);
    } finally {
      await b.faults.component('s3', 'start');
    }
    expect(failed.status).toMatchObject({ attempts: 3, error: { reason: 'StoreUnavailable' } });
    expect(failed.status?.error?.message).toMatch(/gave up after 3 attempts/);
    expect(findCondition(failed.status?.conditions as never, 'Completed')).toMatchObject({
      status: 'False',
      reason: 'StoreUnavailable',
    });
    await expect
      .poll(() => eventReasons(b, ns, 'b3'), EVENTS_RECORDED)
      .toEqual(expect.arrayContaining(['AttemptFailed', 'Failed']));
    // Once S3 answers again, what could not be aborted is.
    await until(
      'no unfinished upload',
      async () => {
        const s = (await bk.get('b3')).status;
        if (s?.pendingAbort) return undefined;
        return (await store.unfinished(`${prefix}/${ns}/cache/`)).length === 0 ? true : undefined;
      },
      90_000,
      500,
    );
    const k = `${prefix}/${ns}/cache/b3-${(failed.metadata.uid ?? '').slice(0, 8)}.rdb.zst.enc`;
    expect(await store.head(k)).toBeUndefined();
  });

  it('each bad input fails at once with a reason that names the fix', async () => {
    await secret('half-creds', { AWS_ACCESS_KEY_ID: s3.accessKeyId });
    await secret('wrong-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: 'not-the-secret',
    });
    await secret('unknown-creds', { AWS_ACCESS_KEY_ID: 'nobody', AWS_SECRET_ACCESS_KEY: 'x' });
    await secret('short-key', { key: randomBytes(16) });
    await rdc.apply('bare', { version: '7.0', replicas: 1 });
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      [
        'no-cluster',
        { cluster: { name: 'nope' } },
        'ClusterNotFound',
        /RedisCluster nope does not exist in namespace .*: create it/,
      ],
      [
        'no-store',
        { cluster: { name: 'bare' } },
        'NoStore',
        /set spec.store on this Backup, or spec.backup.store on RedisCluster bare/,
      ],
      [
        'no-secret',
        { cluster: { name: 'cache' }, store: storeSpec({}, { credentialsSecret: { name: 'missing' } }) },
        'CredentialsSecretNotFound',
        /Secret missing .* does not exist .*: create it with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
      ],
      [
        'half-secret',
        { cluster: { name: 'cache' }, store: storeSpec({}, { credentialsSecret: { name: 'half-creds' } }) },
        'CredentialsSecretIncomplete',
        /has no AWS_SECRET_ACCESS_KEY: add it/,
      ],
      [
        'no-bucket',
        { cluster: { name: 'cache' }, store: storeSpec({}, { bucket: 'no-such-bucket' }) },
        'BucketNotFound',
        /bucket no-such-bucket does not exist .*: create it/,
      ],
      [
        'wrong-secret',
        { cluster: { name: 'cache' }, store: storeSpec({}, { credentialsSecret: { name: 'wrong-creds' } }) },
        'InvalidCredentials',
        /AWS_SECRET_ACCESS_KEY in Secret wrong-creds/,
      ],
      [
        'unknown-key',
        {
          cluster: { name: 'cache' },
          store: storeSpec({}, { credentialsSecret: { name: 'unknown-creds' } }),
        },
        'InvalidCredentials',
        /access key in Secret unknown-creds/,
      ],
      [
        'short-key',
        { cluster: { name: 'cache' }, store: storeSpec({ encryption: { secretName: 'short-key' } }) },
        'EncryptionKeyInvalid',
        /holds 16 bytes; an AES-256 key is exactly 32 bytes/,
      ],
      [
        'no-key',
        { cluster: { name: 'cache' }, store: storeSpec({ encryption: { secretName: 'nothing' } }) },
        'EncryptionSecretNotFound',
        /Secret nothing .* does not exist/,
      ],
    ];
    for (const [name, spec] of cases) await bk.create(name, spec);
    for (const [name, , reason, message] of cases) {
      const failed = await bk.phase(name, 'Failed', 60_000);
      expect(failed.status?.error, name).toMatchObject({ reason });
      expect(failed.status?.error?.message, name).toMatch(message);
      expect(findCondition(failed.status?.conditions as never, 'Completed'), name).toMatchObject({
        status: 'False',
        reason,
      });
      // Bad input is not retried: no attempt was made.
      expect(failed.status?.attempts ?? 0, name).toBeLessThanOrEqual(1);
    }
    await expect.poll(() => eventReasons(b, ns, 'no-bucket'), EVENTS_RECORDED).toContain('Failed');
    const bus = await connectBus(b.info.natsUrl, 'test-backup-failed');
    try {
      const msg = await bus.jsm.streams.getMessage(STREAM, {
        last_by_subj: subjectFor('dev.tideway.backup.failed', {
          kind: 'Backup',
          namespace: ns,
          name: 'no-bucket',
        }),
      });
      expect(fromMessage(msg?.header, msg?.data ?? new Uint8Array()).data).toMatchObject({
        reason: 'BucketNotFound',
      });
    } finally {
      await bus.close();
    }
  });

  it('runs with least privilege: Secrets by name only, nothing of the cluster changed', async () => {
    const authz = b.kc.makeApiClient(AuthorizationV1Api);
    const can = async (verb: string, group: string, resource: string, subresource?: string) =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${SYSTEM_NAMESPACE}:tideway-backup`,
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
    expect(await can('get', '', 'secrets')).toBe(true);
    expect(await can('update', 'tideway.dev', 'backups', 'status')).toBe(true);
    for (const [verb, group, resource] of [
      ['list', '', 'secrets'],
      ['watch', '', 'secrets'],
      ['create', '', 'secrets'],
      ['delete', '', 'pods'],
      ['patch', '', 'pods'],
      ['patch', 'tideway.dev', 'redisclusters'],
      ['update', 'tideway.dev', 'redisclusters'],
      ['create', 'tideway.dev', 'backups'],
      ['delete', 'tideway.dev', 'backups'],
    ] as const)
      expect(await can(verb, group, resource), `${verb} ${resource}`).toBe(false);
  });
});
