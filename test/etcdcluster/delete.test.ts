import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PolicyV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { bed, until } from '../support/bed.ts';
import { etcdFunctionsFor } from './support.ts';

/**
 * docs/etcd.md: "Pods and Services are owned by the EtcdCluster. PVCs are not …: deleting the
 * EtcdCluster stops its members and keeps their volumes", and a volume made for an earlier cluster
 * of the same name "is never used nor deleted: the step waits with VolumeConflict". Here with a
 * real cluster's real leftovers (cluster.test.ts imitates them with a hand-made PVC).
 */
describe('etcd cluster deleted', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(b, 'etcd-delete');
  const policy = b.kc.makeApiClient(PolicyV1Api);
  const marker = `kept-${Math.random().toString(36).slice(2, 10)}`;
  const instance = 'app.kubernetes.io/instance=main';

  const volumes = async () =>
    Object.fromEntries(
      (
        await b.core.listNamespacedPersistentVolumeClaim({ namespace: ns(), labelSelector: instance })
      ).items.map((v) => [v.metadata?.name ?? '', v]),
    );
  const uidsOf = (vs: Awaited<ReturnType<typeof volumes>>) =>
    Object.fromEntries(Object.entries(vs).map(([name, v]) => [name, v.metadata?.uid]));
  const serviceNames = async () =>
    (await b.core.listNamespacedService({ namespace: ns(), labelSelector: instance })).items
      .map((s) => s.metadata?.name)
      .sort();
  const pdbNames = async () =>
    (await policy.listNamespacedPodDisruptionBudget({ namespace: ns(), labelSelector: instance })).items.map(
      (p) => p.metadata?.name,
    );
  /** kubectl waits for the object to be gone, i.e. for the finalizer to finish. */
  const kubectlDelete = () => b.kubectl('delete', 'etcdcluster', 'main', '-n', ns(), '--timeout=120s');
  /** Whether a volume's directory (the bed's PVs are host directories) holds the bytes. */
  const holds = async (pvcVolumeName: string, bytes: string) => {
    const pv = await b.core.readPersistentVolume({ name: pvcVolumeName });
    const dir = pv.spec?.hostPath?.path ?? '';
    for (const f of await readdir(dir, { recursive: true, withFileTypes: true }))
      if (f.isFile() && (await readFile(join(f.parentPath, f.name))).includes(bytes)) return true;
    return false;
  };

  it('kubectl delete → the finalizer stops every member, Services and PDB go; the volumes and their data stay', async () => {
    await etcd.apply('main', { size: 3 });
    await etcd.ready('main', 3);
    const client = await etcd.client('main');
    try {
      await client.put('kept', marker);
      expect((await client.get('kept'))?.value.toString()).toBe(marker);
    } finally {
      client.close();
    }
    expect(await serviceNames()).toEqual(['main-etcd', 'main-etcd-peers']);
    expect(await pdbNames()).toEqual(['main-etcd']);
    const before = await volumes();
    expect(Object.keys(before).sort()).toEqual(['data-main-etcd-0', 'data-main-etcd-1', 'data-main-etcd-2']);

    await kubectlDelete();
    await expect(etcd.get('main')).rejects.toMatchObject({ code: 404 });
    // The finalizer let go only once no member pod was left, not even a terminating one.
    expect(await etcd.pods('main')).toEqual([]);
    // Services and the PDB follow through owner references. The garbage collector learns of a kind
    // installed after it started at its next discovery sync (every 30 s): the first file of a run
    // waits up to that long.
    await until(
      'the Services and the PDB garbage-collected',
      async () => ((await serviceNames()).length === 0 && (await pdbNames()).length === 0 ? true : undefined),
      120_000,
      500,
    );
    // By now the garbage collector would have taken the volumes too had they been owned.
    const after = await volumes();
    expect(uidsOf(after)).toEqual(uidsOf(before));
    for (const [name, v] of Object.entries(after)) {
      expect(v.metadata?.deletionTimestamp, name).toBeUndefined();
      expect(v.status?.phase, name).toBe('Bound');
      expect(await holds(v.spec?.volumeName ?? '', marker), `${name} holds the written value`).toBe(true);
    }
  });

  it('made again with the same name → its predecessor’s volumes are neither used nor deleted (VolumeConflict)', async () => {
    const before = uidsOf(await volumes());
    await etcd.apply('main', { size: 3 });
    const ready = await until(
      'Ready=False VolumeConflict',
      async () => {
        const x = await etcd.get('main');
        const r = (
          x.status?.conditions as
            | { type: string; status: string; reason: string; message: string }[]
            | undefined
        )?.find((k) => k.type === 'Ready');
        return r?.reason === 'VolumeConflict' ? r : undefined;
      },
      60_000,
      500,
    );
    expect(ready).toMatchObject({ status: 'False', message: expect.stringContaining('data-main-etcd-0') });
    expect(await etcd.pods('main')).toEqual([]);
    const after = await volumes();
    expect(uidsOf(after)).toEqual(before);
    for (const [name, v] of Object.entries(after))
      expect(v.metadata?.deletionTimestamp, name).toBeUndefined();

    // Deleted again before it ever started a member: gone at once, the volumes still kept.
    await kubectlDelete();
    await expect(etcd.get('main')).rejects.toMatchObject({ code: 404 });
    expect(uidsOf(await volumes())).toEqual(before);
  });
});
