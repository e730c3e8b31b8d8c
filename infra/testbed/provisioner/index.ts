import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/**
 * Storage for a cluster without a provisioner: every pending claim gets a PV (a directory here,
 * pre-bound to the claim through claimRef, so the real PV controller binds them at once), and a
 * released PV is removed with its directory. Retain, not Delete: no deleter plugin exists for
 * hostPath, so the provisioner does the deleting.
 */
export const startVolumeProvisioner = async (o: { kubeconfig: string; dir: string }) => {
  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await mkdir(o.dir, { recursive: true });
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const sync = async () => {
    const claims = await core.listPersistentVolumeClaimForAllNamespaces();
    for (const c of claims.items) {
      if (c.status?.phase !== 'Pending' || c.spec?.volumeName || c.metadata?.deletionTimestamp) continue;
      const name = `pvc-${c.metadata?.uid}`;
      const path = join(o.dir, name);
      await mkdir(path, { recursive: true });
      await core
        .createPersistentVolume({
          body: {
            metadata: { name, labels: { 'tideway.dev/testbed-volume': 'true' } },
            spec: {
              capacity: { storage: c.spec?.resources?.requests?.storage ?? '1Gi' },
              accessModes: c.spec?.accessModes ?? ['ReadWriteOnce'],
              storageClassName: c.spec?.storageClassName ?? '',
              persistentVolumeReclaimPolicy: 'Retain',
              volumeMode: 'Filesystem',
              hostPath: { path, type: 'Directory' },
              claimRef: { namespace: c.metadata?.namespace, name: c.metadata?.name, uid: c.metadata?.uid },
            },
          },
        })
        .catch(() => undefined); // exists already: the binder is on it
    }
    const volumes = await core.listPersistentVolume({ labelSelector: 'tideway.dev/testbed-volume=true' });
    for (const pv of volumes.items) {
      if (pv.status?.phase !== 'Released') continue;
      const path = pv.spec?.hostPath?.path;
      if (path?.startsWith(o.dir)) await rm(path, { recursive: true, force: true });
      await core.deletePersistentVolume({ name: pv.metadata?.name ?? '' }).catch(() => undefined);
    }
  };
  const tick = async () => {
    if (stopped) return;
    await sync().catch(() => undefined);
    if (!stopped) timer = setTimeout(tick, 500);
  };
  await tick();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
};
