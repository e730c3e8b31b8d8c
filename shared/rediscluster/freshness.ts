import { parseDuration } from '../api/duration.ts';
import type { Backup, RedisCluster } from '../api/generated.ts';
import { isBackupOf } from '../backup/cluster-ref.ts';
import { takenAtOf } from '../backup/latest.ts';
import type { ConditionInput } from '../kube/conditions.ts';
import { rfc3339 } from '../kube/time.ts';

type LastBackup = { name: string; completedAt: string };

/**
 * The newest Completed Backup of the RedisCluster, by when its data was taken (takenAtOf; an
 * EtcdCluster namesake's do not count), and that time.
 */
export const lastBackupOf = (
  clusterName: string,
  backups: readonly Backup[],
): (LastBackup & { takenAt: number }) | undefined => {
  let last: (LastBackup & { takenAt: number }) | undefined;
  for (const b of backups) {
    const [completedAt, takenAt] = [b.status?.completedAt, takenAtOf(b)];
    if (
      !isBackupOf(b, { kind: 'RedisCluster', name: clusterName }) ||
      b.status?.phase !== 'Completed' ||
      !completedAt ||
      takenAt === undefined
    )
      continue;
    if (!last || takenAt > last.takenAt) last = { name: b.metadata.name ?? '', completedAt, takenAt };
  }
  return last;
};

/**
 * status.lastBackup, and the BackupStale condition when spec.backup.maxBackupAge is set: stale
 * when the newest Completed backup is older than that, or there is none and the cluster itself is
 * older than that (a new cluster has that long to get its first one).
 */
export const freshness = (
  rc: RedisCluster,
  backups: readonly Backup[],
  now: Date,
): { lastBackup?: LastBackup; ageSeconds?: number; condition?: ConditionInput } => {
  const last = lastBackupOf(rc.metadata.name ?? '', backups);
  const lastBackup = last && { name: last.name, completedAt: last.completedAt };
  // The age of the data, not of the upload: a backup that streamed for an hour is an hour older.
  const ageSeconds = last ? Math.max(0, (now.getTime() - last.takenAt) / 1000) : undefined;
  const target = rc.spec.backup?.maxBackupAge;
  const found = {
    ...(lastBackup ? { lastBackup } : {}),
    ...(ageSeconds === undefined ? {} : { ageSeconds }),
  };
  if (!target) return found;
  const maxSeconds = parseDuration(target) / 1000;
  if (last && ageSeconds !== undefined) {
    const stale = ageSeconds > maxSeconds;
    return {
      ...found,
      condition: {
        type: 'BackupStale',
        status: stale ? 'True' : 'False',
        reason: stale ? 'TooOld' : 'Fresh',
        // The time, not the age: a message that changed every tick would rewrite the status every tick.
        message: `the newest completed backup, ${last.name}, holds data from ${rfc3339(new Date(last.takenAt))}; maxBackupAge is ${target}`,
      },
    };
  }
  const created = Date.parse(String(rc.metadata.creationTimestamp ?? now.toISOString()));
  const stale = (now.getTime() - created) / 1000 > maxSeconds;
  return {
    ...found,
    condition: {
      type: 'BackupStale',
      status: stale ? 'True' : 'False',
      reason: stale ? 'NoBackup' : 'FirstBackupDue',
      message: stale
        ? `no completed backup of this cluster, which is older than maxBackupAge ${target}: create a Backup or a BackupSchedule`
        : `no completed backup yet; the first is due within maxBackupAge ${target} of the cluster's creation`,
    },
  };
};

/** When the cluster's Backups cannot be read: say so rather than guess. */
export const freshnessUnknown = (rc: RedisCluster, why: string): ConditionInput | undefined =>
  rc.spec.backup?.maxBackupAge
    ? {
        type: 'BackupStale',
        status: 'Unknown',
        reason: 'BackupsUnreadable',
        message: `cannot list Backups: ${why}`,
      }
    : undefined;
