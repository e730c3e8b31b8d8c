import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { EtcdCluster } from '../api/generated.ts';
import { removeFinalizer } from '../engines/finalizer.ts';
import { TIDEWAY_KINDS } from '../kube/resources.ts';
import { deleteExactly, listMemberPods } from './kube.ts';
import { namesOf } from './names.ts';

/**
 * Deletion: the member pods go first (only those this cluster controls, each by uid), and the
 * EtcdCluster stays (phase Deleting) until the last is gone, so "deleted" means nothing runs.
 * Services follow through owner references; volumes are kept (data is never deleted implicitly).
 * Returns true when the finalizer was removed.
 */
export const finalize = async (kc: KubeConfig, c: EtcdCluster, fence: () => void): Promise<boolean> => {
  const core = kc.makeApiClient(CoreV1Api);
  const pods = await listMemberPods(kc, c);
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp) continue;
    fence();
    await deleteExactly(() =>
      core.deleteNamespacedPod({
        namespace: namesOf(c).namespace,
        name: p.metadata?.name ?? '',
        body: { preconditions: { uid: p.metadata?.uid ?? '' } },
      }),
    );
  }
  if (pods.length > 0) return false;
  fence();
  await removeFinalizer(kc, TIDEWAY_KINDS.EtcdCluster, c);
  return true;
};
