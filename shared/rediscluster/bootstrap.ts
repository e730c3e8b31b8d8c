import type { RedisCluster } from '../api/generated.ts';

/** The Restore that loads spec.bootstrap.fromBackup into a new cluster. */
export const bootstrapRestoreName = (cluster: string) => `${cluster}-bootstrap`;

/**
 * Why a cluster created from a backup is not Ready yet, or undefined when it may be: it has no
 * fromBackup, or the backup's data is in (status.bootstrap.completedAt). An empty cluster must
 * never report Ready in place of the data it was created for.
 */
export const bootstrapPending = (
  rc: Pick<RedisCluster, 'spec' | 'status'>,
): { reason: string; message: string; failed: boolean } | undefined => {
  const backup = rc.spec.bootstrap?.fromBackup?.name;
  const b = rc.status?.bootstrap;
  if (!backup || b?.completedAt) return undefined;
  return {
    reason: b?.reason ?? 'Bootstrapping',
    message: b?.message ?? `loading the data of Backup ${backup} before the cluster is Ready`,
    failed: b?.failed === true,
  };
};
