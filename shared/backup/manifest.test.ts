import { describe, expect, it } from 'vitest';
import { backupKeys, clusterPrefix } from './manifest.ts';

describe('backupKeys', () => {
  const keys = (backup: string, uid: string) =>
    backupKeys({
      prefix: 'p',
      namespace: 'ns',
      cluster: 'cache',
      backup,
      uid,
      compression: 'zstd',
      encrypted: true,
    });

  it('names each Backup object by its uid: the same Backup always the same key, a new one of that name another', () => {
    expect(keys('nightly', 'aaaaaaaa-1')).toEqual(keys('nightly', 'aaaaaaaa-1'));
    expect(keys('nightly', 'aaaaaaaa-1')).toEqual({
      object: 'p/ns/cache/nightly-aaaaaaaa.rdb.zst.enc',
      manifest: 'p/ns/cache/nightly-aaaaaaaa.manifest.json',
    });
    expect(keys('nightly', 'bbbbbbbb-2').object).not.toBe(keys('nightly', 'aaaaaaaa-1').object);
  });

  it('keeps an EtcdCluster’s snapshots in a folder of their own, so a RedisCluster namesake’s prefix never holds them', () => {
    const etcd = backupKeys({
      prefix: 'p',
      namespace: 'ns',
      cluster: 'cache',
      backup: 'nightly',
      uid: 'cccccccc-3',
      compression: 'gzip',
      encrypted: false,
      kind: 'EtcdCluster',
    });
    expect(etcd).toEqual({
      object: 'p/ns/_etcd/cache/nightly-cccccccc.db.gz',
      manifest: 'p/ns/_etcd/cache/nightly-cccccccc.manifest.json',
    });
    expect(etcd.object.startsWith(clusterPrefix('p', 'ns', 'cache'))).toBe(false);
    expect(etcd.object.startsWith(clusterPrefix('p', 'ns', 'cache', 'EtcdCluster'))).toBe(true);
  });
});
