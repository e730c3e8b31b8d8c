import type { Backup, BackupScheduleSpec } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { takenAtOf } from '../../shared/backup/latest.ts';
import type { BackupPhase, RetentionCandidate, RetentionDecision } from '../../shared/backup/retention.ts';
import type { ConditionInput } from '../../shared/kube/conditions.ts';
import { SCHEDULED_TIME_ANNOTATION } from './names.ts';

/** One of the schedule's Backups, as the schedule sees it. */
export type OwnedBackup = RetentionCandidate & {
  uid: string;
  deleting: boolean;
  /** The cluster it holds data of (`kind/name`): retention weighs each cluster's on their own. */
  cluster: string;
};

const dateOf = (...values: (string | undefined)[]) => {
  for (const v of values) {
    const t = v ? new Date(v) : undefined;
    if (t && !Number.isNaN(t.getTime())) return t;
  }
  return new Date(0);
};

/**
 * When the data was taken (takenAtOf, as `latest` orders); before a run starts, the run it was
 * made for stands in (and the creation time for a Backup without one).
 */
export const ownedBackupOf = (b: Backup): OwnedBackup => ({
  name: b.metadata.name,
  uid: b.metadata.uid ?? '',
  phase: b.status?.phase as BackupPhase | undefined,
  takenAt: new Date(
    takenAtOf(b) ?? dateOf(b.metadata.annotations?.[SCHEDULED_TIME_ANNOTATION], b.metadata.creationTimestamp),
  ),
  deleting: Boolean(b.metadata.deletionTimestamp),
  cluster: (({ kind, name }) => `${kind}/${name}`)(clusterRefOf(b.spec)),
});

/** Not finished: Pending, Running, or not picked up yet. A Backup being deleted no longer counts. */
export const isActive = (b: OwnedBackup) =>
  !b.deleting && (b.phase === undefined || b.phase === 'Pending' || b.phase === 'Running');

const oldestFirst = (a: OwnedBackup, b: OwnedBackup) =>
  a.takenAt.getTime() - b.takenAt.getTime() || a.name.localeCompare(b.name);

/** The status API lists at most this many active Backups. */
const MAX_ACTIVE = 64;

/** status.active (oldest first) and status.lastSuccessfulBackup (the newest Completed). */
export const summarize = (backups: readonly OwnedBackup[]) => {
  const active = backups.filter(isActive).sort(oldestFirst);
  const completed = backups.filter((b) => !b.deleting && b.phase === 'Completed').sort(oldestFirst);
  return {
    active: active.map((b) => b.name).slice(0, MAX_ACTIVE),
    lastSuccessfulBackup: completed.at(-1)?.name,
  };
};

/** Whether runs will be made, and if not, what to change. */
export const readyCondition = (o: {
  spec: Pick<BackupScheduleSpec, 'suspend' | 'cluster' | 'schedule'>;
  namespace: string;
  /** Why the schedule and time zone give no fire times, if they do not. */
  clockProblem?: { reason: string; message: string } | undefined;
  next: Date | 'never' | undefined;
  timeZone: string;
  clusterExists: boolean;
}): ConditionInput => {
  if (o.clockProblem) return { type: 'Ready', status: 'False', ...o.clockProblem };
  if (o.spec.suspend)
    return {
      type: 'Ready',
      status: 'False',
      reason: 'Suspended',
      message:
        'spec.suspend is true: no Backups are made; set it to false to resume (runs due meanwhile are not made up)',
    };
  if (!o.clusterExists)
    return {
      type: 'Ready',
      status: 'False',
      reason: 'ClusterNotFound',
      message: `${o.spec.cluster.kind ?? 'RedisCluster'} ${o.spec.cluster.name} does not exist in namespace ${o.namespace}: runs are skipped until it does; create it or correct spec.cluster.name`,
    };
  if (o.next === 'never' || o.next === undefined)
    return {
      type: 'Ready',
      status: 'False',
      reason: 'NeverFires',
      message: `schedule "${o.spec.schedule}" never fires in ${o.timeZone}; choose a date that exists`,
    };
  return {
    type: 'Ready',
    status: 'True',
    reason: 'Scheduled',
    message: `next run at ${o.next.toISOString()} (schedule "${o.spec.schedule}" in ${o.timeZone})`,
  };
};

const RULES = ['keepLast', 'keepHourly', 'keepDaily', 'keepWeekly', 'keepMonthly', 'maxAge'] as const;

/** What retention did on its last pass. */
export const retentionCondition = (
  policy: BackupScheduleSpec['retention'],
  decision: RetentionDecision,
): ConditionInput => {
  const rules = RULES.filter((r) => policy?.[r] !== undefined && policy[r] !== 0).map(
    (r) => `${r} ${policy?.[r]}`,
  );
  const gone =
    decision.delete.length > 0
      ? `; deleted ${decision.delete.map((d) => `${d.name} (${d.reason})`).join(', ')}`
      : '';
  return {
    type: 'Retention',
    status: 'True',
    reason: rules.length > 0 ? 'Applied' : 'NoPolicy',
    message:
      `${rules.length > 0 ? rules.join(', ') : 'no retention rules: every Completed Backup is kept'}; ${decision.keep.length} Completed kept${gone}`.slice(
        0,
        4096,
      ),
  };
};
