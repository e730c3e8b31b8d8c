import { recordsSchedule } from '../../shared/api/schedule.ts';
/** What the watcher's schedule tick says: a run is due (and how many fires it folded in). */
export type Tick = { scheduledTime: Date; missedBefore: number };

export type RunInput = {
  scheduledTime: Date;
  /**
   * Runs due before this one that nobody handled, counted from the status (countFrom), not taken
   * from the tick: a waiting tick is replaced by a newer one of its schedule, and its count with it.
   */
  missedBefore: number;
  now: Date;
  /** The latest run already handled (status.lastScheduleTime). */
  lastScheduleTime: Date | undefined;
  suspend: boolean;
  startingDeadlineSeconds: number;
  concurrencyPolicy: 'Forbid' | 'Replace';
  /** The schedule's next fire after this run's time. */
  nextAfter: Date | 'never';
  clusterExists: boolean;
  /** This run's Backup (by its deterministic name) already exists and is the schedule's. */
  made: boolean;
  /** The schedule's other Backups still Pending or Running, oldest first. */
  active: readonly string[];
  /** Of those, the Backups of earlier runs: what Replace replaces (never a later run's). */
  replaceable: readonly string[];
};

/**
 * From when fires before a run count as missed: after the last run handled (or the schedule's
 * creation), and not before the schedule last became Ready, so runs while it was suspended (or
 * invalid) are not missed. While the status still says it is not Ready (a resume or a fix not
 * seen yet), nothing before this run counts.
 */
export const countFrom = (o: {
  scheduledTime: Date;
  lastScheduleTime: Date | undefined;
  created: Date;
  ready: { status: string; lastTransitionTime: string } | undefined;
}): Date => {
  const since = o.lastScheduleTime ?? o.created;
  if (!o.ready) return since;
  if (o.ready.status !== 'True') return o.scheduledTime;
  const readySince = new Date(o.ready.lastTransitionTime);
  return readySince > since ? readySince : since;
};

/** Reasons of the LastRun condition and of the Events about a run. */
export const RunReason = {
  created: 'BackupCreated',
  replaced: 'Replaced',
  skippedConcurrent: 'SkippedConcurrent',
  missedDeadline: 'MissedDeadline',
  superseded: 'Superseded',
  clusterNotFound: 'ClusterNotFound',
  nameTaken: 'NameTaken',
} as const;
export type RunReason = (typeof RunReason)[keyof typeof RunReason];

export type RunDecision =
  /** Nothing to record: handled before (a redelivery, a late duplicate), or suspended. */
  | { kind: 'ignore'; why: 'AlreadyHandled' | 'Suspended' }
  /** The run is recorded as handled without a Backup; `missed` runs are added to missedRuns. */
  | { kind: 'skip'; reason: RunReason; message: string; missed: number }
  /** Make the run's Backup (unless `made`) and delete `replace`; then record it. */
  | { kind: 'create'; reason: RunReason; replace: readonly string[]; missed: number; made: boolean };

const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;

/**
 * What to do with one run of a schedule. Pure: the handler observes, this decides.
 * - A run at or before lastScheduleTime was handled: nothing (ticks come at least once).
 * - The run's Backup exists already (made before a crash or a redelivery): just record it.
 * - Suspended: nothing, and nothing recorded.
 * - Late runs: when a later fire is already due, this one is superseded (its own tick follows);
 *   one older than startingDeadlineSeconds is skipped. Both count as missed, with the runs before
 *   it nobody handled (`missedBefore`: fires while the operator was down). So after downtime one
 *   run is made if the latest is within the deadline, and every older one is counted once.
 * - No cluster: skipped, with a reason that names it.
 * - Another Backup of the schedule still Pending or Running: Forbid skips this run, Replace
 *   makes this one and deletes those.
 */
export const decideRun = (i: RunInput): RunDecision => {
  const at = i.scheduledTime;
  if (i.lastScheduleTime && at.getTime() <= i.lastScheduleTime.getTime())
    return { kind: 'ignore', why: 'AlreadyHandled' };
  // Made before a crash cut the recording short: the run happened, whatever the clock says now.
  // Replace still replaces: the delivery that made it may have died before deleting them.
  if (i.made) {
    const replace = i.concurrencyPolicy === 'Replace' ? i.replaceable : [];
    return {
      kind: 'create',
      reason: replace.length > 0 ? RunReason.replaced : RunReason.created,
      replace,
      missed: i.missedBefore,
      made: true,
    };
  }
  if (i.suspend) return { kind: 'ignore', why: 'Suspended' };
  const before = i.missedBefore > 0 ? `; ${i.missedBefore} earlier run(s) were missed too` : '';
  if (i.nextAfter !== 'never' && i.nextAfter.getTime() <= i.now.getTime())
    return {
      kind: 'skip',
      reason: RunReason.superseded,
      message: `the run at ${at.toISOString()} was not made: the run at ${i.nextAfter.toISOString()} is already due and is made instead${before}`,
      missed: 1 + i.missedBefore,
    };
  const late = i.now.getTime() - at.getTime();
  if (late > i.startingDeadlineSeconds * 1000)
    return {
      kind: 'skip',
      reason: RunReason.missedDeadline,
      message: `the run at ${at.toISOString()} was ${seconds(late)} late, more than startingDeadlineSeconds (${i.startingDeadlineSeconds}); skipped${before}`,
      missed: 1 + i.missedBefore,
    };
  if (!i.clusterExists)
    return {
      kind: 'skip',
      reason: RunReason.clusterNotFound,
      message: `the run at ${at.toISOString()} was skipped: its cluster does not exist; create it or correct spec.cluster.name (and spec.cluster.kind)`,
      missed: i.missedBefore,
    };
  if (i.active.length > 0 && i.concurrencyPolicy === 'Forbid')
    return {
      kind: 'skip',
      reason: RunReason.skippedConcurrent,
      message: `the run at ${at.toISOString()} was skipped: Backup ${i.active.join(', ')} is still running and concurrencyPolicy is Forbid`,
      missed: i.missedBefore,
    };
  return {
    kind: 'create',
    reason: i.replaceable.length > 0 ? RunReason.replaced : RunReason.created,
    replace: i.replaceable,
    missed: i.missedBefore,
    made: false,
  };
};

/** The schedule a status was brought up to date with, and since when it holds (status.schedule). */
export type ScheduleRecord = { expression: string; timeZone: string; since: string };

/** What the API server records of who wrote which fields, and when (metadata.managedFields). */
type ManagedField = { time?: string; fieldsV1?: Record<string, unknown> };

/** When spec.schedule or spec.timeZone was last written, as the API server's field managers say. */
export const scheduleWrittenAt = (fields: readonly ManagedField[] | undefined): string | undefined => {
  let latest: string | undefined;
  for (const m of fields ?? []) {
    const spec = m.fieldsV1?.['f:spec'] as Record<string, unknown> | undefined;
    if (!m.time || !spec) continue; // status writes own no spec field
    if (!('f:schedule' in spec || 'f:timeZone' in spec)) continue;
    if (!latest || new Date(m.time) > new Date(latest)) latest = m.time;
  }
  return latest;
};

/**
 * The schedule as the spec says now, and since when: the recorded one while it is the same; one
 * changed since, from when its fields were written (`writtenAt`; else now, when first seen); with
 * none recorded (a status of an earlier version), since the last run handled, or the schedule's
 * creation. Missed runs are counted from then: a new cron's fires before the change never
 * existed.
 */
export const currentSchedule = (
  spec: { schedule: string; timeZone?: string | undefined },
  status: { schedule?: ScheduleRecord | undefined; lastScheduleTime?: string | undefined } | undefined,
  o: { now: string; created: string; writtenAt?: string | undefined },
): ScheduleRecord => {
  const r = status?.schedule;
  if (r && recordsSchedule(r, spec)) return r;
  return {
    expression: spec.schedule,
    timeZone: spec.timeZone || 'UTC',
    since: r ? (o.writtenAt ?? o.now) : (status?.lastScheduleTime ?? o.created),
  };
};

/** currentSchedule of a BackupSchedule as read. */
export const scheduleInForce = (
  schedule: {
    spec: { schedule: string; timeZone?: string | undefined };
    status?: Parameters<typeof currentSchedule>[1];
    metadata: { creationTimestamp?: string | undefined; managedFields?: unknown };
  },
  now: string,
) =>
  currentSchedule(schedule.spec, schedule.status, {
    now,
    created: schedule.metadata.creationTimestamp ?? now,
    writtenAt: scheduleWrittenAt(schedule.metadata.managedFields as ManagedField[] | undefined),
  });
