import { describe, expect, it } from 'vitest';
import { resourceEvent, tickEvent } from './events.ts';
import { WATCHED } from './kinds.ts';

const rdc = WATCHED.find((w) => w.kind === 'RedisCluster')!;
const pods = WATCHED.find((w) => w.kind === 'Pod')!;
const obj = {
  metadata: { name: 'cache', namespace: 'prod', uid: 'u1', generation: 4, resourceVersion: '77' },
};

describe('watcher events', () => {
  it('builds a valid resource event with deterministic id and the routing extensions', () => {
    const a = resourceEvent('/tideway/clusters/x', { type: 'updated', watched: rdc, obj })!;
    const b = resourceEvent('/tideway/clusters/x', { type: 'updated', watched: rdc, obj })!;
    expect(a.validate()).toBe(true);
    expect(a.id).toBe(b.id);
    expect(a.traceparent).not.toBe(b.traceparent);
    expect(a).toMatchObject({
      type: 'dev.tideway.resource.updated',
      kind: 'RedisCluster',
      namespace: 'prod',
      name: 'cache',
      generation: '4',
      subject: 'namespaces/prod/redisclusters/cache',
    });
  });

  const pod = (labels: Record<string, string>) =>
    resourceEvent('/s', {
      type: 'updated',
      watched: pods,
      obj: { metadata: { name: 'cache-1', namespace: 'prod', uid: 'p', resourceVersion: '9', labels } },
    });

  it('maps a pod to the cluster of the engine its labels name', () => {
    expect(
      pod({
        'app.kubernetes.io/name': 'redis',
        'app.kubernetes.io/instance': 'cache',
        'app.kubernetes.io/managed-by': 'tideway',
      }),
    ).toMatchObject({ kind: 'RedisCluster', name: 'cache', cause: 'Pod/prod/cache-1' });
  });

  it('maps what each engine makes to its own kind of cluster: a Redis and an etcd cluster may share a name', () => {
    const labels = (engine: string) => ({
      'app.kubernetes.io/name': engine,
      'app.kubernetes.io/instance': 'main',
      'app.kubernetes.io/managed-by': 'tideway',
    });
    expect(pod(labels('etcd'))).toMatchObject({ kind: 'EtcdCluster', name: 'main' });
    expect(pod(labels('redis'))).toMatchObject({ kind: 'RedisCluster', name: 'main' });
    // A kind the engine does not make is not its cluster's change (a Redis StatefulSet's PVC).
    const pvcs = WATCHED.find((w) => w.kind === 'PersistentVolumeClaim')!;
    const pvc = (engine: string) =>
      resourceEvent('/s', {
        type: 'updated',
        watched: pvcs,
        obj: {
          metadata: {
            name: 'data-main-0',
            namespace: 'prod',
            uid: 'v',
            resourceVersion: '3',
            labels: labels(engine),
          },
        },
      });
    expect(pvc('etcd')).toMatchObject({
      kind: 'EtcdCluster',
      name: 'main',
      cause: 'PersistentVolumeClaim/prod/data-main-0',
    });
    expect(pvc('redis')).toBeUndefined();
  });

  it('announces no cluster for an object whose labels name no engine (or no cluster)', () => {
    expect(pod({ 'app.kubernetes.io/instance': 'cache', 'app.kubernetes.io/managed-by': 'tideway' })).toBe(
      undefined,
    );
    expect(
      pod({
        'app.kubernetes.io/name': 'postgres',
        'app.kubernetes.io/instance': 'cache',
        'app.kubernetes.io/managed-by': 'tideway',
      }),
    ).toBe(undefined);
    expect(pod({ 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/managed-by': 'tideway' })).toBe(
      undefined,
    );
  });

  it('names the cluster a Backup or Restore acts on (the `cluster` extension), and no other kind’s', () => {
    const of = (kind: string, spec: unknown) =>
      resourceEvent('/s', {
        type: 'updated',
        watched: WATCHED.find((w) => w.kind === kind)!,
        obj: { metadata: { name: 'b1', namespace: 'prod', uid: 'u', resourceVersion: '3' }, spec },
      })!;
    const backup = of('Backup', { cluster: { name: 'cache' } });
    expect(backup.validate()).toBe(true);
    expect(backup).toMatchObject({
      kind: 'Backup',
      name: 'b1',
      cluster: 'cache',
      clusterkind: 'RedisCluster',
    });
    expect(of('Backup', { cluster: { name: 'main', kind: 'EtcdCluster' } })).toMatchObject({
      cluster: 'main',
      clusterkind: 'EtcdCluster',
    });
    expect(of('Restore', { cluster: { name: 'cache' } })).toMatchObject({
      kind: 'Restore',
      cluster: 'cache',
    });
    expect(of('BackupSchedule', { cluster: { name: 'cache' } }).cluster).toBeUndefined();
    expect(of('Backup', {}).cluster).toBeUndefined();
  });

  it('gives a tick one id per slot', () => {
    const t1 = tickEvent('/s', 'dev.tideway.tick.health', 'RedisCluster', obj, '100');
    expect(t1.validate()).toBe(true);
    expect(t1.id).toBe(tickEvent('/s', 'dev.tideway.tick.health', 'RedisCluster', obj, '100').id);
    expect(t1.id).not.toBe(tickEvent('/s', 'dev.tideway.tick.health', 'RedisCluster', obj, '101').id);
  });
});
