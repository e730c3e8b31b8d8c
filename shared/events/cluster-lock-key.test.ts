import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { clusterLockKey } from './cluster-lock-key.ts';
import { objectKeyOf } from './subjects.ts';

const event = (ext: Record<string, string>) =>
  new CloudEvent({ specversion: '1.0', id: 'x', source: '/s', type: 'dev.tideway.resource.updated', ...ext });

describe('clusterLockKey (the backup and restore functions lock their cluster)', () => {
  for (const kind of ['Backup', 'Restore'])
    it(`${kind}: locks the RedisCluster the watcher names, so it never runs beside its reconcile, health or backups`, () => {
      expect(clusterLockKey(event({ kind, namespace: 'prod', name: 'nightly', cluster: 'cache.a' }))).toBe(
        objectKeyOf({ kind: 'RedisCluster', namespace: 'prod', name: 'cache.a' }),
      );
    });

  for (const kind of ['Backup', 'Restore'])
    it(`${kind}: locks the object itself when the event names no cluster`, () => {
      expect(clusterLockKey(event({ kind, namespace: 'prod', name: 'nightly' }))).toBe(
        objectKeyOf({ kind, namespace: 'prod', name: 'nightly' }),
      );
    });

  it('locks the cluster of the kind the watcher names: an etcd and a Redis cluster may share a name', () => {
    const etcd = clusterLockKey(
      event({ kind: 'Backup', namespace: 'prod', name: 'b', cluster: 'main', clusterkind: 'EtcdCluster' }),
    );
    expect(etcd).toBe(objectKeyOf({ kind: 'EtcdCluster', namespace: 'prod', name: 'main' }));
    expect(etcd).not.toBe(
      clusterLockKey(event({ kind: 'Backup', namespace: 'prod', name: 'b', cluster: 'main' })),
    );
  });
});
