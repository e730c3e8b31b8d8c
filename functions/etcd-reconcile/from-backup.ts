import { type CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type EtcdCluster, zBackup } from '../../shared/api/generated.ts';
import type { RestoreFrom } from '../../shared/etcdcluster/desired.ts';
import {
  isSourceProblem,
  restoreSourceOf,
  type SourceProblem,
} from '../../shared/etcdcluster/restore/source.ts';
import { isNotFound } from '../../shared/kube/errors.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

/**
 * What a cluster made from a backup starts from, read before it forms: the Backup's record checked
 * (restoreSourceOf) and Tideway's own image for the fetch step; or the problem, for the cluster's
 * conditions. Undefined for a cluster that is not made from a backup, or formed already (its data
 * is never loaded again).
 */
export const fromBackupOf = async (
  c: EtcdCluster,
  ctx: HandlerContext,
): Promise<(RestoreFrom & { backupUid: string }) | SourceProblem | undefined> => {
  const name = c.spec.bootstrap?.fromBackup?.name;
  if (!name || c.status?.clusterID || c.status?.bootstrap?.completedAt) return undefined;
  let raw: unknown;
  try {
    raw = await ctx.kube
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...TIDEWAY_KINDS.Backup, namespace: c.metadata.namespace ?? '', name });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const backup = raw === undefined ? undefined : zBackup.safeParse(raw).data;
  const first = c.status?.bootstrap?.backupUid;
  // Checked once, then pinned: a Backup made again under the name is another backup.
  if (backup && first && backup.metadata.uid !== first)
    return {
      reason: 'BackupReplaced',
      message: `Backup ${name} was deleted and made again after this cluster started from it: it may hold other data; delete this EtcdCluster and create it again to start from the new one`,
      retry: false,
    };
  const source = restoreSourceOf(c, name, backup);
  if (isSourceProblem(source)) return source;
  const tidewayImage = ctx.env.TIDEWAY_IMAGE ?? '';
  if (!tidewayImage)
    return {
      reason: 'RestoreUnavailable',
      message:
        'etcd-reconcile does not know Tideway’s image (TIDEWAY_IMAGE), which fetches the backup into the first member: set it (the Helm chart does)',
      retry: false,
    };
  return { source, tidewayImage, backupUid: backup?.metadata.uid ?? '' };
};

/**
 * The volume the backup was restored into, to record (`status.bootstrap.restoredVolume`): its
 * claim's uid, or '' when the claim is gone (a member made again then restores a new one). Any
 * other failure to read it is thrown, never recorded as '': the member's pod would be made again
 * with its restore steps, which refuse the volume they restored, and be deleted — for ever.
 */
export const restoredVolumeUid = async (
  core: Pick<CoreV1Api, 'readNamespacedPersistentVolumeClaim'>,
  namespace: string,
  name: string,
): Promise<string> => {
  try {
    return (await core.readNamespacedPersistentVolumeClaim({ namespace, name })).metadata?.uid ?? '';
  } catch (error) {
    if (isNotFound(error)) return '';
    throw error;
  }
};
