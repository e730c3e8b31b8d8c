import { describe, expect, it } from 'vitest';
import type { Backup } from '../../api/generated.ts';
import { restoreSourceOf } from './source.ts';

const store = {
  s3: { bucket: 'bk', credentialsSecret: { name: 's3' }, prefix: 'p' },
  compression: 'gzip' as const,
  encryption: { secretName: 'key' },
};
const sha = 'a'.repeat(64);
const backup = (o: { kind?: 'EtcdCluster'; status?: Backup['status'] } = {}): Backup => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Backup',
  metadata: { name: 'b1' },
  spec: { cluster: { name: 'old', ...(o.kind ? { kind: o.kind } : {}) } },
  status: o.status ?? {
    phase: 'Completed',
    store,
    location: 's3://bk/p/ns/_etcd/old/b1-12345678.db.gz.enc',
    sha256: sha,
    size: 1000,
    rdbSize: 20512,
    etcdVersion: '3.6.16',
  },
});
const cluster = (version = '3.6') => ({ spec: { version } });

describe('the backup an EtcdCluster starts from', () => {
  it('is the recorded object of a Completed EtcdCluster backup, read as it was stored', () => {
    expect(restoreSourceOf(cluster(), 'b1', backup({ kind: 'EtcdCluster' }))).toEqual({
      backup: 'b1',
      store,
      key: 'p/ns/_etcd/old/b1-12345678.db.gz.enc',
      sha256: sha,
      size: 1000,
      dbSize: 20512,
      compression: 'gzip',
      encryptionSecret: 'key',
    });
  });

  it('refuses a RedisCluster’s backup (an RDB is no etcd snapshot), for good', () => {
    expect(restoreSourceOf(cluster(), 'b1', backup())).toMatchObject({
      reason: 'WrongClusterKind',
      retry: false,
    });
  });

  it('waits for a backup that is missing or still running; a failed one is final', () => {
    expect(restoreSourceOf(cluster(), 'b1', undefined)).toMatchObject({
      reason: 'BackupNotFound',
      retry: true,
    });
    expect(
      restoreSourceOf(cluster(), 'b1', backup({ kind: 'EtcdCluster', status: { phase: 'Running' } })),
    ).toMatchObject({ reason: 'BackupNotCompleted', retry: true });
    expect(
      restoreSourceOf(cluster(), 'b1', backup({ kind: 'EtcdCluster', status: { phase: 'Failed' } })),
    ).toMatchObject({ reason: 'BackupFailed', retry: false });
  });

  it('refuses a 3.6 snapshot for a 3.5 cluster, and a record without its location or checksum', () => {
    expect(restoreSourceOf(cluster('3.5'), 'b1', backup({ kind: 'EtcdCluster' }))).toMatchObject({
      reason: 'BackupTooNew',
    });
    const b = backup({ kind: 'EtcdCluster' });
    const moved = { ...b, status: { ...b.status, location: 's3://other/p/x.db' } } as Backup;
    expect(restoreSourceOf(cluster(), 'b1', moved)).toMatchObject({ reason: 'SourceMismatch' });
    const unsummed = { ...b, status: { ...b.status, sha256: undefined } } as Backup;
    expect(restoreSourceOf(cluster(), 'b1', unsummed)).toMatchObject({ reason: 'SourceMismatch' });
  });

  it('refuses a backup whose database and WAL do not fit the cluster’s volumes', () => {
    const big = backup({ kind: 'EtcdCluster' });
    const status = { ...big.status, rdbSize: 1.5 * 2 ** 30 };
    expect(restoreSourceOf({ spec: { version: '3.6' } }, 'b1', { ...big, status } as Backup)).toMatchObject({
      reason: 'BackupTooLarge',
      retry: false,
    });
    expect(
      restoreSourceOf({ spec: { version: '3.6', storage: { size: '2Gi' } } }, 'b1', {
        ...big,
        status,
      } as Backup),
    ).toMatchObject({ backup: 'b1' });
  });
});
