import { createHash } from 'node:crypto';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { isBackupOf } from '../../shared/backup/cluster-ref.ts';
import { SAFETY_LABEL } from '../../shared/backup/latest.ts';
import type { BackupStoreSpec } from '../../shared/backup/store-config.ts';

export { isSafetyBackup, SAFETY_LABEL } from '../../shared/backup/latest.ts';
/** The Restore that made it (name and uid; names may be longer than a label value). */
export const MADE_BY = { restore: 'tideway.dev/restore', uid: 'tideway.dev/restore-uid' } as const;

const MAX_NAME = 253;
const SUFFIX = '-safety';

/** `<restore>-safety`; a name too long for that is shortened with a hash, the same every time. */
export const safetyBackupName = (restore: string) => {
  if (restore.length + SUFFIX.length <= MAX_NAME) return `${restore}${SUFFIX}`;
  const hash = createHash('sha256').update(restore).digest('hex').slice(0, 8);
  return `${restore.slice(0, MAX_NAME - SUFFIX.length - hash.length - 1).replace(/[-.]+$/, '')}-${hash}${SUFFIX}`;
};

/**
 * The safety backup: a Backup like any other, of the same cluster, into the cluster's store (or,
 * when it has none, the source's), taken from an in-sync replica by the backup function. It is not
 * owned by the Restore: it is the way back, and must outlive the Restore's deletion (and a Restore
 * owned by its cluster). It goes when someone deletes it (with its object, deletionPolicy Delete).
 */
export const safetyBackupOf = (restore: Restore, store: BackupStoreSpec) => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Backup',
  metadata: {
    name: safetyBackupName(restore.metadata.name),
    namespace: restore.metadata.namespace,
    labels: { [SAFETY_LABEL]: 'true' },
    annotations: { [MADE_BY.restore]: restore.metadata.name, [MADE_BY.uid]: restore.metadata.uid ?? '' },
  },
  spec: { cluster: { name: restore.spec.cluster.name }, store },
});

/**
 * The Backup of that name was made by this Restore (and not by an earlier one of the same name):
 * its uid annotation, which anyone who may create Backups can copy, and a Backup of this very
 * cluster, which no copy can fake — the backup function takes it from the cluster its spec names,
 * so a rollback to it can only bring back this cluster's own data.
 */
export const madeBy = (b: Pick<Backup, 'metadata' | 'spec'>, restore: Pick<Restore, 'metadata' | 'spec'>) =>
  b.metadata.annotations?.[MADE_BY.uid] === restore.metadata.uid &&
  isBackupOf(b, { kind: 'RedisCluster', name: restore.spec.cluster.name });
