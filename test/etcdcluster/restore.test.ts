import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureImage } from '../../scripts/image/build.ts';
import type { EtcdCluster } from '../../shared/api/generated.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { backups, bedStore, bedStoreSpec, keyOf } from '../backup/support/backups.ts';
import { bed, until } from '../support/bed.ts';
import { EVENTS_RECORDED, eventReasons } from '../support/redis.ts';
import { createSecret, etcdFunctionsFor, type KeyRecord, keysWithRevisions } from './support.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

const readyCondition = (c: EtcdCluster) =>
  findCondition(c.status?.conditions as never, 'Ready') as
    | { status: string; reason: string; message: string }
    | undefined;

/**
 * Issue 15 acceptance: Backup → new EtcdCluster from it → the same keys and revisions. The first
 * member starts from the snapshot (Tideway's own image fetches and checks it, etcd's image runs
 * etcdutl), the others join it one at a time. A backup that cannot serve is a condition, never an
 * empty Ready cluster.
 */
describe('etcd restore into a new cluster', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(
    b,
    'etcd-restore',
    // A deleted Backup still in use is looked at again every 2 s (30 s deployed).
    [
      {
        fn: 'backup',
        env: { TIDEWAY_REPLICA: '0', TIDEWAY_BACKUP_ATTEMPTS: '2', TIDEWAY_BACKUP_IN_USE_RECHECK_MS: '2000' },
      },
    ],
    async () => ({
      TIDEWAY_IMAGE: (await ensureImage({ root: ROOT, log: (m) => process.stderr.write(`[image] ${m}\n`) }))
        .image,
    }),
  );
  const bk = backups(b, ns);
  const { s3 } = b.info;
  const store = bedStore(b);
  let written: KeyRecord[] = [];

  const secret = (name: string, data: Record<string, Buffer | string>) => createSecret(b, ns(), name, data);
  /** Waits for Ready=False with `reason`; never Ready meanwhile. */
  const refused = (name: string, reason: string, timeoutMs = 120_000) =>
    until(
      `${name} Ready=False ${reason}`,
      async () => {
        const c = await etcd.get(name);
        const ready = readyCondition(c);
        if (ready?.status === 'True') throw new Error(`${name} became Ready: ${JSON.stringify(c.status)}`);
        return ready?.reason === reason ? c : undefined;
      },
      timeoutMs,
      500,
    );

  beforeAll(async () => {
    await secret('s3-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('backup-key', { key: randomBytes(32) });
    await etcd.apply('src', {
      size: 1,
      backup: { store: bedStoreSpec(b, `e2e/${ns()}`, { encryption: { secretName: 'backup-key' } }) },
    });
    await etcd.ready('src', 1);
    const c = await etcd.client('src');
    try {
      for (let i = 0; i < 30; i++) await c.put(`k/${String(i).padStart(2, '0')}`, randomBytes(40 + i));
      for (let i = 0; i < 8; i++) await c.put(`k/${String(i).padStart(2, '0')}`, `again-${i}`);
      await c.put('k/gone', 'soon');
      await c.delete('k/gone');
      written = await keysWithRevisions(c);
    } finally {
      c.close();
    }
    await bk.create('b1', { cluster: { name: 'src', kind: 'EtcdCluster' } });
    await bk.phase('b1', 'Completed', 120_000);
  }, 600_000);

  it('makes a new cluster of 3 from the backup: the same keys, values and revisions, members joining one at a time', async () => {
    await etcd.apply('copy', { size: 3, bootstrap: { fromBackup: { name: 'b1' } } });
    const ready = await etcd.ready('copy', 3, 300_000);
    expect(ready.status?.bootstrap).toMatchObject({ backup: 'b1' });
    expect(ready.status?.bootstrap?.completedAt).toBeTruthy();
    const c = await etcd.client('copy');
    try {
      expect(await keysWithRevisions(c)).toEqual(written);
      expect(await c.get('k/gone')).toBeUndefined();
      // It is a cluster of its own: writes go on from the restored revision.
      const before = Math.max(...written.map((w) => w.modRevision));
      expect((await c.put('k/new', 'after')).revision).toBeGreaterThan(before);
    } finally {
      c.close();
    }
    // The source is untouched by it.
    const s = await etcd.client('src');
    try {
      expect(await s.get('k/new')).toBeUndefined();
    } finally {
      s.close();
    }
    // Only the first member ran the restore steps.
    const pods = await etcd.pods('copy');
    expect(pods.map((p) => (p.spec?.initContainers ?? []).map((x) => x.name))).toEqual([
      ['fetch-backup', 'restore-snapshot'],
      [],
      [],
    ]);
  });

  it('never starts from a missing backup or a RedisCluster’s, and makes no member for it', async () => {
    await etcd.apply('nobackup', { size: 1, bootstrap: { fromBackup: { name: 'missing' } } });
    await bk.create('redis-b', { cluster: { name: 'src' } });
    await etcd.apply('wrongkind', { size: 1, bootstrap: { fromBackup: { name: 'redis-b' } } });
    expect((await refused('nobackup', 'BackupNotFound')).status?.bootstrap?.message).toMatch(/missing/);
    expect((await refused('wrongkind', 'WrongClusterKind')).status?.bootstrap?.message).toMatch(
      /RedisCluster src/,
    );
    expect(await etcd.pods('nobackup')).toEqual([]);
    expect(await etcd.pods('wrongkind')).toEqual([]);
  });

  it('refuses a backup whose object changed after it was stored, and says so on the cluster', async () => {
    await bk.create('b2', { cluster: { name: 'src', kind: 'EtcdCluster' } });
    const done = await bk.phase('b2', 'Completed', 120_000);
    const key = keyOf(done.status?.location ?? '', s3.bucket);
    const object = await store.get(key, 64 * 1024 * 1024);
    if (!object) throw new Error(`no object at ${key}`);
    object[Math.floor(object.length / 2)] = (object[Math.floor(object.length / 2)] ?? 0) ^ 0xff;
    await store.put(key, object, 'application/octet-stream');
    await etcd.apply('tampered', { size: 1, bootstrap: { fromBackup: { name: 'b2' } } });
    const c = await refused('tampered', 'RestoreFailed', 180_000);
    expect(readyCondition(c)?.message).toMatch(/ChecksumMismatch/);
    // Nothing was restored: the member never started etcd.
    const [pod] = await etcd.pods('tampered');
    expect(pod?.status?.containerStatuses?.[0]?.state?.running).toBeUndefined();

    // The cluster still starts from b2 (its fetch is retried): deleting b2 waits for it, object
    // and all, and goes on once the cluster is deleted.
    await bk.delete('b2');
    await expect.poll(() => eventReasons(b, ns(), 'b2'), EVENTS_RECORDED).toContain('InUse');
    expect((await bk.get('b2')).metadata.deletionTimestamp).toBeTruthy();
    expect(await store.head(key)).toBeDefined();
    await b.custom.deleteNamespacedCustomObject({
      ...TIDEWAY_KINDS.EtcdCluster,
      namespace: ns(),
      name: 'tampered',
    });
    await bk.gone('b2', 60_000);
    expect(await store.head(key)).toBeUndefined();
  });

  // Last: it deletes the store's Secrets. A real node that comes back runs a pod's init containers
  // again, with its volumes set up again; the test bed's release does the same.
  it('starts the first member again after a reboot once the store’s Secrets are gone: its steps find the data', async () => {
    const pods = await etcd.pods('copy');
    const first = pods.find((p) => (p.spec?.initContainers ?? []).length > 0)?.metadata?.name ?? '';
    expect(first).not.toBe('');
    for (const name of ['s3-creds', 'backup-key'])
      await b.core.deleteNamespacedSecret({ namespace: ns(), name });
    await b.faults.holdDownPod(ns(), first);
    await b.faults.releasePod(ns(), first);
    // Its steps ran again (fetch: the data is there; etcdutl: refused), so Tideway made it again
    // without them, on the same volume.
    await until(
      `${first} serving again, without restore steps`,
      async () => {
        const p = (await etcd.pods('copy')).find((x) => x.metadata?.name === first);
        const ready = p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return p && (p.spec?.initContainers ?? []).length === 0 && ready ? p : undefined;
      },
      180_000,
      1000,
    );
    await etcd.ready('copy', 3, 180_000);
    const c = await etcd.client('copy');
    try {
      expect((await c.get('k/new'))?.value.toString()).toBe('after');
      const now = await keysWithRevisions(c);
      expect(now.filter((k) => k.key !== 'k/new')).toEqual(written);
    } finally {
      c.close();
    }
  });
});
