import { describe, expect, it } from 'vitest';
import type { EtcdCluster, RedisCluster } from '../../shared/api/generated.ts';
import { clustersStartingFrom, redisClustersStartingFrom } from './in-use.ts';

const cluster = (
  name: string,
  o: { from?: string; status?: EtcdCluster['status']; deleting?: boolean } = {},
) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'EtcdCluster',
    metadata: { name, ...(o.deleting ? { deletionTimestamp: '2026-11-28T00:00:00Z' } : {}) },
    spec: o.from ? { bootstrap: { fromBackup: { name: o.from } } } : {},
    ...(o.status ? { status: o.status } : {}),
  }) as EtcdCluster;
const nightly = { metadata: { name: 'nightly', uid: 'u-1' } };

describe('the EtcdClusters that start from a Backup', () => {
  it('are those made from it that have not formed yet: before a pod, and while the first member fetches it', () => {
    expect(
      clustersStartingFrom(
        [
          cluster('new', { from: 'nightly' }),
          cluster('pinned', {
            from: 'nightly',
            status: { bootstrap: { backup: 'nightly', backupUid: 'u-1' } },
          }),
          cluster('failing', {
            from: 'nightly',
            status: { bootstrap: { backupUid: 'u-1', reason: 'RestoreFailed', message: 'fetch-backup: …' } },
          }),
        ],
        nightly,
      ),
    ).toEqual(['new', 'pinned', 'failing']);
  });

  it('are those whose first member’s volume was restored but that have not formed: a member made again fetches it again', () => {
    expect(
      clustersStartingFrom(
        [
          cluster('restored', {
            from: 'nightly',
            status: { bootstrap: { restoredAt: '2026-11-28T00:00:00Z' } },
          }),
        ],
        nightly,
      ),
    ).toEqual(['restored']);
  });

  it('are not those formed (bootstrap completed, a cluster id), deleted, of another Backup, or pinned to an earlier one of its name', () => {
    expect(
      clustersStartingFrom(
        [
          cluster('completed', {
            from: 'nightly',
            status: { bootstrap: { completedAt: '2026-11-28T00:00:00Z' } },
          }),
          cluster('formed', { from: 'nightly', status: { clusterID: 'c1' } }),
          cluster('deleting', { from: 'nightly', deleting: true }),
          cluster('other', { from: 'weekly' }),
          cluster('empty'),
          cluster('earlier', { from: 'nightly', status: { bootstrap: { backupUid: 'u-0' } } }),
        ],
        nightly,
      ),
    ).toEqual([]);
  });
});

describe('the RedisClusters that start from a Backup', () => {
  const redis = (
    name: string,
    o: { from?: string; status?: RedisCluster['status']; deleting?: boolean } = {},
  ) =>
    ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name, ...(o.deleting ? { deletionTimestamp: '2026-11-28T00:00:00Z' } : {}) },
      spec: o.from ? { bootstrap: { fromBackup: { name: o.from } } } : {},
      ...(o.status ? { status: o.status } : {}),
    }) as RedisCluster;

  it('are those made from it that have not loaded it: before the load’s Restore exists, and after it failed', () => {
    expect(
      redisClustersStartingFrom(
        [
          redis('new', { from: 'nightly' }),
          redis('failed', {
            from: 'nightly',
            status: { bootstrap: { failed: true, reason: 'RestoreFailed' } },
          }),
          redis('loaded', {
            from: 'nightly',
            status: { bootstrap: { completedAt: '2026-11-28T00:00:00Z' } },
          }),
          redis('deleting', { from: 'nightly', deleting: true }),
          redis('other', { from: 'weekly' }),
          redis('empty'),
        ],
        nightly,
      ),
    ).toEqual(['new', 'failed']);
  });
});
