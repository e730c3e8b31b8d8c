import { describe, expect, it } from 'vitest';
import { ETCD_IMAGES } from '../../shared/etcdcluster/names.ts';
import { bed, until } from '../support/bed.ts';
import { etcdctlJob, etcdFunctionsFor } from './support.ts';

const etcdImage = ETCD_IMAGES['3.6'];

/**
 * EtcdClusters end to end with the product's functions (watcher, two etcd-reconcile replicas, each
 * as its own ServiceAccount) on the test bed: real etcd members from the official image's table
 * entry, finding each other through the bed's cluster DNS; the data checked through etcd itself.
 */
describe('etcd cluster', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(b, 'etcd');

  const uids = async (name: string) =>
    Object.fromEntries((await etcd.pods(name)).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));

  it('size 3 → Ready: three voting members, a leader, clients write and read', async () => {
    await etcd.apply('main', { size: 3 });
    const c = await etcd.ready('main', 3);
    expect(c.status).toMatchObject({ phase: 'Ready', ready: '3/3', size: 3, readyMembers: 3 });
    expect(c.status?.leader).toMatch(/^main-etcd-[0-2]$/);
    expect(c.status?.version).toMatch(/^3\.6\./);
    expect(c.status?.clusterID).toMatch(/^[0-9a-f]+$/);
    const client = await etcd.client('main');
    try {
      for (let i = 0; i < 50; i++) await client.put(`k${i}`, `v${i}`);
      expect((await client.get('k49'))?.value.toString()).toBe('v49');
      expect((await client.memberList()).members.map((m) => m.name).sort()).toEqual([
        'main-etcd-0',
        'main-etcd-1',
        'main-etcd-2',
      ]);
    } finally {
      client.close();
    }
    // A client in the cluster, at the Service by its name (the bed's cluster DNS), as apps reach it.
    const put = await etcdctlJob(b, ns(), 'put-via-service', [
      '--endpoints=http://main-etcd:2379',
      'put',
      'svc-key',
      'hello',
    ]);
    expect(put, put.log).toMatchObject({ ok: true });
    const got = await etcdctlJob(b, ns(), 'get-via-service', [
      '--endpoints=http://main-etcd:2379',
      'get',
      'svc-key',
      '--print-value-only',
    ]);
    expect(got.log.trim()).toBe('hello');
  });

  it('size 5 by apply → five voting members, one at a time, without restarting the first three', async () => {
    const before = await uids('main');
    await etcd.apply('main', { size: 5 });
    await etcd.ready('main', 5);
    const after = await uids('main');
    for (const [name, uid] of Object.entries(before)) expect(after[name], name).toBe(uid);
    const restarts = (await etcd.pods('main')).flatMap(
      (p) => p.status?.containerStatuses?.map((s) => s.restartCount) ?? [],
    );
    expect(restarts.filter((r) => r > 0)).toEqual([]);
    const client = await etcd.client('main');
    try {
      const { members } = await client.memberList();
      expect(members.filter((m) => !m.isLearner)).toHaveLength(5);
      expect((await client.get('k0'))?.value.toString()).toBe('v0');
    } finally {
      client.close();
    }
  });

  it('size 3 again → two members removed (the leader stays), their pods and volumes gone, data intact', async () => {
    const leader = (await etcd.get('main')).status?.leader;
    await etcd.apply('main', { size: 3 });
    const c = await etcd.ready('main', 3);
    expect((c.status?.members ?? []).map((m) => m.name)).toContain(leader);
    await until(
      'the removed members’ volumes deleted',
      async () => {
        const pvcs = await b.core.listNamespacedPersistentVolumeClaim({ namespace: ns() });
        return pvcs.items.filter((v) => !v.metadata?.deletionTimestamp).length === 3 ? true : undefined;
      },
      60_000,
      500,
    );
    const client = await etcd.client('main');
    try {
      const all = await client.range({ prefix: 'k' });
      expect(all.count).toBe(50);
    } finally {
      client.close();
    }
  });

  it('a change of resources is rolled out one member at a time, the leader last, on their volumes; data intact', async () => {
    const before = await etcd.pods('main');
    const leader = (await etcd.get('main')).status?.leader;
    await etcd.apply('main', { size: 3, resources: { requests: { cpu: '10m', memory: '64Mi' } } });
    const c = await until(
      'every member restarted with the new resources',
      async () => {
        const x = await etcd.ready('main', 3, 120_000);
        const pods = await etcd.pods('main');
        const done = pods.every(
          (p) => p.spec?.containers[0]?.resources?.requests?.cpu === '10m' && !p.metadata?.deletionTimestamp,
        );
        return done && x.metadata.generation === x.status?.observedGeneration ? x : undefined;
      },
      240_000,
      1000,
    );
    const after = await etcd.pods('main');
    // The same members (names) on their own volumes, each pod a new one.
    expect(after.map((p) => p.metadata?.name)).toEqual(before.map((p) => p.metadata?.name));
    for (const p of after) expect(before.map((x) => x.metadata?.uid)).not.toContain(p.metadata?.uid);
    // The leader was restarted last: it had handed leadership over first.
    expect(c.status?.leader).not.toBe(leader);
    const client = await etcd.client('main');
    try {
      expect((await client.range({ prefix: 'k' })).count).toBe(50);
    } finally {
      client.close();
    }
  });

  it('a member’s pod and volume deleted → it is removed and a new member (new id, new volume) takes its place; no data lost', async () => {
    const c = await etcd.get('main');
    const victim = (c.status?.members ?? []).find((m) => m.name !== c.status?.leader);
    expect(victim?.name).toBeDefined();
    const name = victim?.name ?? '';
    const pvc = await b.core.readNamespacedPersistentVolumeClaim({ namespace: ns(), name: `data-${name}` });
    await b.core.deleteNamespacedPersistentVolumeClaim({ namespace: ns(), name: `data-${name}` });
    await b.core.deleteNamespacedPod({ namespace: ns(), name });
    const healed = await until(
      `${name} (${victim?.id}) replaced`,
      async () => {
        const x = await etcd.ready('main', 3, 5_000).catch(() => undefined);
        return x && !(x.status?.members ?? []).some((m) => m.id === victim?.id) ? x : undefined;
      },
      240_000,
      1000,
    );
    // The old member left the member list; the one in its place has a volume of its own.
    const newcomer = (healed.status?.members ?? []).find(
      (m) => !(c.status?.members ?? []).some((o) => o.id === m.id),
    );
    expect(newcomer?.learner).toBe(false);
    const volume = await b.core.readNamespacedPersistentVolumeClaim({
      namespace: ns(),
      name: `data-${newcomer?.name}`,
    });
    expect(volume.metadata?.uid).not.toBe(pvc.metadata?.uid);
    const client = await etcd.client('main');
    try {
      expect((await client.range({ prefix: 'k' })).count).toBe(50);
    } finally {
      client.close();
    }
  });

  it('never starts a member on a volume left by an earlier cluster of the same name, and leaves it alone', async () => {
    // What deleting an EtcdCluster `old` leaves (its volumes are kept), then `old` made again.
    await b.core.createNamespacedPersistentVolumeClaim({
      namespace: ns(),
      body: {
        metadata: {
          name: 'data-old-etcd-0',
          labels: {
            'app.kubernetes.io/name': 'etcd',
            'app.kubernetes.io/instance': 'old',
            'app.kubernetes.io/managed-by': 'tideway',
            'tideway.dev/member': 'old-etcd-0',
          },
          annotations: { 'tideway.dev/owner-uid': 'an-earlier-cluster' },
        },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    const before = await b.core.readNamespacedPersistentVolumeClaim({
      namespace: ns(),
      name: 'data-old-etcd-0',
    });
    await etcd.apply('old', { size: 1 });
    const c = await until(
      'Ready=False VolumeConflict',
      async () => {
        const x = await etcd.get('old');
        const r = (
          x.status?.conditions as { type: string; reason: string; message: string }[] | undefined
        )?.find((k) => k.type === 'Ready');
        return r?.reason === 'VolumeConflict' ? r : undefined;
      },
      60_000,
      500,
    );
    expect(c.message).toContain('data-old-etcd-0');
    expect(await etcd.pods('old')).toEqual([]);
    const after = await b.core.readNamespacedPersistentVolumeClaim({
      namespace: ns(),
      name: 'data-old-etcd-0',
    });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('never takes over a pod of a member’s name that is not its own: it waits with PodConflict and leaves it', async () => {
    // A pod someone else made, named as the first member of `taken` would be (and with its labels).
    const foreign = await b.core.createNamespacedPod({
      namespace: ns(),
      body: {
        metadata: {
          name: 'taken-etcd-0',
          labels: { 'app.kubernetes.io/name': 'etcd', 'app.kubernetes.io/instance': 'taken' },
        },
        spec: {
          containers: [{ name: 'etcd', image: etcdImage, command: ['/usr/local/bin/etcd', '--version'] }],
          restartPolicy: 'Never',
        },
      },
    });
    await etcd.apply('taken', { size: 1 });
    const c = await until(
      'Ready=False PodConflict',
      async () => {
        const x = await etcd.get('taken');
        const r = (
          x.status?.conditions as { type: string; reason: string; message: string }[] | undefined
        )?.find((k) => k.type === 'Ready');
        return r?.reason === 'PodConflict' ? r : undefined;
      },
      60_000,
      500,
    );
    expect(c.message).toContain('taken-etcd-0');
    const after = await b.core.readNamespacedPod({ namespace: ns(), name: 'taken-etcd-0' });
    expect(after.metadata?.uid).toBe(foreign.metadata?.uid);
    expect(after.metadata?.deletionTimestamp).toBeUndefined();
    // It is not counted as a member either.
    expect((await etcd.get('taken')).status?.readyMembers ?? 0).toBe(0);
  });

  it('refuses bad input at admission with a message that says what to fix', async () => {
    await expect(etcd.apply('bad', { size: 4 })).rejects.toMatchObject({
      stderr: expect.stringContaining('size must be 1, 3, 5 or 7'),
    });
    await expect(etcd.apply('bad', { version: '3.7' })).rejects.toMatchObject({
      stderr: expect.stringContaining('version must be 3.5 or 3.6'),
    });
    await expect(etcd.apply('main', { size: 3, version: '3.5' })).rejects.toMatchObject({
      stderr: expect.stringContaining('version cannot go back from 3.6 to 3.5'),
    });
    // Storage is fixed at creation: the members' volumes were made with it.
    await expect(etcd.apply('main', { size: 3, storage: { size: '2Gi' } })).rejects.toMatchObject({
      stderr: expect.stringContaining('storage.size cannot change after creation'),
    });
    await expect(
      etcd.apply('main', { size: 3, storage: { storageClassName: 'fast' } }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('storage.storageClassName cannot change after creation'),
    });
    expect((await etcd.get('main')).spec.storage).toEqual({ size: '1Gi', storageClassName: '' });
  });
});
