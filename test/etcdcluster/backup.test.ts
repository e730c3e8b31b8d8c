import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zManifest } from '../../shared/backup/manifest.ts';
import { openStored } from '../../shared/backup/pipeline.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { backups, bedStore, bedStoreSpec, keyOf } from '../backup/support/backups.ts';
import { findEtcdutl, withRestoredSnapshot } from '../etcd/cluster.ts';
import { bed } from '../support/bed.ts';
import { createSecret, etcdFunctionsFor, type KeyRecord, keysWithRevisions } from './support.ts';

const _run = promisify(execFile);

/**
 * Issue 15, item 5: an EtcdCluster backed up through etcd's snapshot API into the same store as
 * Redis (compression, encryption, SHA-256, manifest), by the product's backup function; the stored
 * object restores (etcdutl) to the same keys with the same revisions.
 */
describe('etcd backup', () => {
  const b = bed();
  const backupEnv = { TIDEWAY_BACKUP_ATTEMPTS: '3' };
  const { ns, etcd } = etcdFunctionsFor(b, 'etcd-backup', [
    { fn: 'backup', env: { ...backupEnv, TIDEWAY_REPLICA: '0' } },
    { fn: 'backup', env: { ...backupEnv, TIDEWAY_REPLICA: '1' } },
  ]);
  const bk = backups(b, ns);
  const { s3 } = b.info;
  const store = bedStore(b);
  const key = randomBytes(32);
  let dir = '';
  let written: KeyRecord[] = [];

  /** The pod of the member that leads now, as etcd says (not status, which may lag). */
  const leaderPod = async () => {
    const c = await etcd.client('main');
    try {
      const leader = await c.findLeader();
      const pods = await etcd.pods('main');
      return pods.find((p) => `http://${p.status?.podIP}:2379` === leader?.endpoint)?.metadata?.name;
    } finally {
      c.close();
    }
  };

  const secret = (name: string, data: Record<string, Buffer | string>) => createSecret(b, ns(), name, data);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'twbed-etcd-backup-'));
    await secret('s3-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('backup-key', { key });
    await etcd.apply('main', {
      size: 3,
      backup: { store: bedStoreSpec(b, `e2e/${ns()}`, { encryption: { secretName: 'backup-key' } }) },
    });
    await etcd.ready('main', 3);
    // Keys with a history: overwritten ones (version > 1), a deleted one, binary values.
    const c = await etcd.client('main');
    try {
      for (let i = 0; i < 40; i++) await c.put(`k/${String(i).padStart(2, '0')}`, randomBytes(64 + i * 16));
      for (let i = 0; i < 10; i++) await c.put(`k/${String(i).padStart(2, '0')}`, `again-${i}`);
      await c.put('gone', 'soon');
      await c.delete('gone');
      written = await keysWithRevisions(c);
    } finally {
      c.close();
    }
    expect(written.length).toBe(40);
  }, 300_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('backs up from a follower: status, manifest, SHA-256; the object restores to the same keys and revisions', async () => {
    await bk.create('b1', { cluster: { name: 'main', kind: 'EtcdCluster' } });
    const done = await bk.phase('b1', 'Completed', 180_000);
    const s = done.status ?? {};
    const cluster = await etcd.get('main');
    expect(s.source).toMatch(/^main-etcd-\d+$/);
    expect(s.source).not.toBe(await leaderPod());
    expect(s.etcdVersion).toMatch(/^3\.6\.\d+$/);
    expect(s.redisVersion).toBeUndefined();
    expect(s.location).toMatch(
      new RegExp(`^s3://${s3.bucket}/e2e/${ns()}/${ns()}/_etcd/main/b1-[0-9a-f]{8}\\.db\\.zst\\.enc$`),
    );
    expect(findCondition(s.conditions as never, 'Completed')).toMatchObject({ status: 'True' });
    const objectKey = keyOf(s.location ?? '', s3.bucket);
    expect((await store.head(objectKey))?.size).toBe(s.size);
    const manifest = zManifest.parse(
      JSON.parse(String(await store.get(objectKey.replace(/\.db\.zst\.enc$/, '.manifest.json'), 65536))),
    );
    expect(manifest).toMatchObject({
      cluster: { namespace: ns(), name: 'main', kind: 'EtcdCluster', uid: cluster.metadata.uid },
      etcd: { version: s.etcdVersion },
      sha256: s.sha256,
      size: s.size,
      rdbSize: s.rdbSize,
      compression: 'zstd',
      encryption: { secretName: 'backup-key' },
    });
    expect(manifest.redis).toBeUndefined();

    // The object, checked and decoded as a restore reads it, is an etcd snapshot etcdutl restores.
    const file = join(dir, 'b1.db');
    await pipeline(
      await openStored({
        store,
        key: objectKey,
        compression: 'zstd',
        encryptionKey: key,
        sha256: s.sha256 ?? '',
        size: s.size ?? 0,
      }),
      createWriteStream(file),
    );
    const etcdutl = await findEtcdutl();
    if (!etcdutl)
      throw new Error('etcdutl is not built: infra/testbed/build/build-go.sh <cache> etcd-images');
    await withRestoredSnapshot(etcdutl, file, join(dir, 'restored'), async (rc) => {
      expect(await keysWithRevisions(rc)).toEqual(written);
      expect(await rc.get('gone')).toBeUndefined();
    });
  });

  it('takes `source: master` from the leader', async () => {
    await bk.create('b2', { cluster: { name: 'main', kind: 'EtcdCluster' }, source: 'master' });
    const s = (await bk.phase('b2', 'Completed', 180_000)).status ?? {};
    expect(s.source).toBe(await leaderPod());
  });

  it('names the kind: a Backup of RedisCluster "main" fails, the EtcdCluster namesake is not taken for it', async () => {
    await bk.create('wrong-kind', { cluster: { name: 'main' } });
    const s = (await bk.phase('wrong-kind', 'Failed', 60_000)).status ?? {};
    expect(s.error).toMatchObject({ reason: 'ClusterNotFound' });
    expect(s.error?.message).toMatch(/RedisCluster main does not exist/);
  });
});
