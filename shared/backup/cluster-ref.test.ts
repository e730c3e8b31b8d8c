import { describe, expect, it } from 'vitest';
import type { Backup } from '../api/generated.ts';
import { clusterRefOf, isBackupOf } from './cluster-ref.ts';

const backup = (cluster: Backup['spec']['cluster']) => ({ spec: { cluster } }) as Pick<Backup, 'spec'>;

describe('a Backup’s cluster', () => {
  it('is a RedisCluster when no kind is named (the API before EtcdCluster)', () => {
    expect(clusterRefOf({ cluster: { name: 'main' } })).toEqual({ kind: 'RedisCluster', name: 'main' });
    expect(clusterRefOf({ cluster: { name: 'main', kind: 'EtcdCluster' } })).toEqual({
      kind: 'EtcdCluster',
      name: 'main',
    });
  });

  it('matches by kind and name: namesakes of another kind are not its backups', () => {
    const redis = { kind: 'RedisCluster', name: 'main' } as const;
    const etcd = { kind: 'EtcdCluster', name: 'main' } as const;
    expect(isBackupOf(backup({ name: 'main' }), redis)).toBe(true);
    expect(isBackupOf(backup({ name: 'main' }), etcd)).toBe(false);
    expect(isBackupOf(backup({ name: 'main', kind: 'EtcdCluster' }), etcd)).toBe(true);
    expect(isBackupOf(backup({ name: 'main', kind: 'EtcdCluster' }), redis)).toBe(false);
    expect(isBackupOf(backup({ name: 'other', kind: 'EtcdCluster' }), etcd)).toBe(false);
  });
});
