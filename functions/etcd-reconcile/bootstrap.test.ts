import { describe, expect, it } from 'vitest';
import { FINALIZER } from '../../shared/engines/finalizer.ts';
import { RESTORE_STEPS } from '../../shared/etcdcluster/desired.ts';
import { OWNER_UID } from '../../shared/etcdcluster/names.ts';
import { notFound } from '../../shared/runtime/fixture.ts';
import { runOnFakeApi } from './fixture.ts';

// biome-ignore lint/suspicious/noExplicitAny: API objects of several kinds, as the fake API serves them
type Obj = Record<string, any>;

/**
 * EtcdCluster e, made from Backup b1 and not formed yet: its first member's claim data-e-0 is
 * `claimUid`, and the pod e-0 on it carries the restore steps, whose last run says `said`.
 */
const world = (o: { restoredVolume: string; claimUid: string; said: 'restored' | 'refused' }) => {
  let cluster: Obj = {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'EtcdCluster',
    metadata: {
      name: 'e',
      namespace: 'prod',
      uid: 'u-e',
      generation: 1,
      resourceVersion: '1',
      finalizers: [FINALIZER],
    },
    spec: { version: '3.6', size: 3, bootstrap: { fromBackup: { name: 'b1' } } },
    status: {
      members: [{ name: 'e-0' }],
      bootstrap: {
        backup: 'b1',
        backupUid: 'u-b1',
        restoredAt: '2026-11-28T07:00:00Z',
        restoredVolume: o.restoredVolume,
      },
    },
  };
  const backup = {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: { name: 'b1', namespace: 'prod', uid: 'u-b1' },
    spec: { cluster: { name: 'old', kind: 'EtcdCluster' } },
    status: {
      phase: 'Completed',
      store: { s3: { bucket: 'bkt', credentialsSecret: { name: 's3' }, prefix: 'p' } },
      location: 's3://bkt/p/prod/_etcd/old/b1-1.db',
      sha256: 'a'.repeat(64),
      size: 1000,
      rdbSize: 20512,
      etcdVersion: '3.6.16',
    },
  };
  const claim = {
    metadata: { name: 'data-e-0', namespace: 'prod', uid: o.claimUid, annotations: { [OWNER_UID]: 'u-e' } },
  };
  const restoreStep =
    o.said === 'restored'
      ? { name: RESTORE_STEPS.restore, state: { terminated: { exitCode: 0 } } }
      : {
          name: RESTORE_STEPS.restore,
          state: {
            terminated: {
              exitCode: 1,
              message: 'Error: data-dir "/var/lib/etcd/data" not empty or could not be read',
            },
          },
        };
  let pods: Obj[] = [
    {
      metadata: {
        name: 'e-0',
        namespace: 'prod',
        uid: 'pod-1',
        ownerReferences: [
          {
            apiVersion: 'tideway.dev/v1alpha1',
            kind: 'EtcdCluster',
            name: 'e',
            uid: 'u-e',
            controller: true,
          },
        ],
      },
      spec: {
        initContainers: [{ name: RESTORE_STEPS.fetch }, { name: RESTORE_STEPS.restore }],
        containers: [{ name: 'etcd', image: 'x' }],
      },
      status: { phase: o.said === 'restored' ? 'Running' : 'Pending', initContainerStatuses: [restoreStep] },
    },
  ];
  const created: Obj[] = [];
  const deleted: string[] = [];
  const api = {
    setDefaultNamespace: () => {},
    read: async () => {
      throw notFound();
    },
    patch: async (x: unknown) => x,
    getNamespacedCustomObject: async (a: { plural: string }) =>
      structuredClone(a.plural === 'backups' ? backup : cluster),
    replaceNamespacedCustomObjectStatus: async (a: { body: Obj }) => {
      cluster = structuredClone(a.body);
      return a.body;
    },
    listNamespacedPod: async () => ({ items: structuredClone(pods) }),
    listNamespacedPersistentVolumeClaim: async () => ({ items: [claim] }),
    readNamespacedPersistentVolumeClaim: async () => claim,
    createNamespacedPersistentVolumeClaim: async () => {
      throw Object.assign(new Error('exists'), { code: 409 });
    },
    createNamespacedPod: async (a: { body: Obj }) => {
      created.push(a.body);
      pods = [
        {
          ...a.body,
          metadata: { ...a.body.metadata, uid: `pod-${created.length + 1}` },
          status: { phase: 'Pending' },
        },
      ];
      return a.body;
    },
    readNamespacedPod: async () => {
      if (!pods[0]) throw notFound();
      return pods[0];
    },
    deleteNamespacedPod: async (a: { name: string }) => {
      deleted.push(a.name);
      pods = [];
      return {};
    },
    createNamespacedEvent: async () => ({}),
  };
  return {
    run: runOnFakeApi(api),
    bootstrap: () => cluster.status.bootstrap as Obj,
    created: () => created.map((p) => (p.spec.initContainers ?? []).map((c: Obj) => c.name) as string[]),
    deleted,
  };
};

describe('a cluster made from a backup, before it formed', () => {
  it('records a second volume the backup was restored into (the first one lost), not only the first', async () => {
    const w = world({ restoredVolume: 'pvc-v1', claimUid: 'pvc-v2', said: 'restored' });
    await w.run();
    expect(w.bootstrap()).toMatchObject({ restoredVolume: 'pvc-v2', restoredAt: '2026-11-28T08:00:00.000Z' });
  });

  it('replaces a pod whose steps refuse the volume they restored by one without them, that volume recorded', async () => {
    const w = world({ restoredVolume: 'pvc-v1', claimUid: 'pvc-v2', said: 'refused' });
    await w.run();
    expect(w.deleted).toEqual(['e-0']);
    expect(w.bootstrap()).toMatchObject({ restoredVolume: 'pvc-v2' });
    // Made again on its restored volume without the steps: not refused, deleted and made again for ever.
    expect(w.created()).toHaveLength(1);
    expect(w.created()[0]).not.toContain(RESTORE_STEPS.restore);
  });
});
