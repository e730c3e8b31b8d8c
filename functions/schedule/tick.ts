import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { BackupScheduleSpecDefaults } from '../../shared/api/generated.ts';
import { STARTING_DEADLINE_MIN_SECONDS } from '../../shared/api/schedule.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import {
  type Condition,
  type ConditionInput,
  findCondition,
  setCondition,
} from '../../shared/kube/conditions.ts';
import type { EventRecorder } from '../../shared/kube/events.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import { type HandlerContext, TerminalError } from '../../shared/runtime/handler.ts';
import { fireAfter, firedUnder, firesBetween, type ScheduleClock } from './clock.ts';
import {
  clusterExists,
  createBackup,
  deleteWhileUnfinished,
  type LoadedSchedule,
  listScheduleBackups,
} from './kube.ts';
import { backupName, isEarlierRun } from './names.ts';
import { countFrom, decideRun, RunReason, scheduleInForce, type Tick } from './run.ts';
import { isActive, ownedBackupOf } from './summary.ts';

const zTick = z.looseObject({
  scheduledTime: z.iso.datetime({ offset: true }),
  missedBefore: z.number().int().min(0).default(0),
});

/** The run a schedule tick announces (functions/watcher/ticks.ts). */
export const parseTick = (event: CloudEvent<unknown>): Tick => {
  const data = typeof event.data === 'string' ? JSON.parse(event.data) : event.data;
  const t = zTick.safeParse(data);
  if (!t.success)
    throw new TerminalError(
      'InvalidTick',
      `schedule tick ${event.id}: ${t.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return { scheduledTime: new Date(t.data.scheduledTime), missedBefore: t.data.missedBefore };
};

type RunOptions = {
  ctx: HandlerContext;
  loaded: LoadedSchedule;
  tick: Tick;
  clock: ScheduleClock;
  now: Date;
  recorder: EventRecorder;
  regarding: Parameters<EventRecorder['record']>[0]['regarding'];
};

/**
 * One run of the schedule: observe (its Backups, the cluster), decide (run.ts), act (create the
 * run's Backup, then delete what Replace replaces), then record it: lastScheduleTime, missedRuns and
 * the LastRun condition, in one compare-and-set write that never records a run twice.
 */
export const runOnce = async ({ ctx, loaded, tick, clock, now, recorder, regarding }: RunOptions) => {
  const { schedule } = loaded;
  const { spec } = schedule;
  const at = tick.scheduledTime;
  const last = schedule.status?.lastScheduleTime ? new Date(schedule.status.lastScheduleTime) : undefined;
  const nextAfter = fireAfter(clock, at);
  if (nextAfter === undefined || (last && at <= last)) return; // no valid schedule now, or handled

  // Fires of the schedule in force from before it took effect (its cron or zone changed since)
  // never existed: neither runs nor missed ones. A tick from before the change is a run only as a
  // fire of the schedule then in force, while the status still records that one.
  const since = new Date(scheduleInForce(schedule, rfc3339(now)).since);
  if (at < since && !firedUnder(schedule.status?.schedule, spec, at)) return;

  const namespace = schedule.metadata.namespace ?? '';
  const name = backupName(schedule.metadata.name, at);
  const counted = countFrom({
    scheduledTime: at,
    lastScheduleTime: last,
    created: new Date(schedule.metadata.creationTimestamp ?? at),
    ready: findCondition(schedule.status?.conditions as Condition[] | undefined, 'Ready'),
  });
  const from = counted > since ? counted : since;
  const owned = (await listScheduleBackups(ctx.kube, schedule)).map(ownedBackupOf);
  const active = owned.filter((b) => isActive(b) && b.name !== name);
  const decision = decideRun({
    scheduledTime: at,
    missedBefore: firesBetween(clock, from, at),
    now,
    lastScheduleTime: last,
    suspend: spec.suspend ?? BackupScheduleSpecDefaults.suspend,
    // Never below the floor admission enforces, whatever an object admitted before it says.
    startingDeadlineSeconds: Math.max(
      STARTING_DEADLINE_MIN_SECONDS,
      spec.startingDeadlineSeconds ?? BackupScheduleSpecDefaults.startingDeadlineSeconds,
    ),
    concurrencyPolicy: spec.concurrencyPolicy ?? BackupScheduleSpecDefaults.concurrencyPolicy,
    nextAfter,
    clusterExists: await clusterExists(ctx.kube, namespace, clusterRefOf(spec)),
    made: owned.some((b) => b.name === name && !b.deleting),
    active: active.map((b) => b.name),
    replaceable: active.filter((b) => isEarlierRun(b.name, name)).map((b) => b.name),
  });
  if (decision.kind === 'ignore') return;

  let result: ConditionInput;
  const earlier = decision.missed > 0 ? `; ${decision.missed} earlier run(s) were missed` : '';
  if (decision.kind === 'create') {
    ctx.fence();
    const made = decision.made ? 'exists' : await createBackup(ctx.kube, schedule, at);
    // Replaced only once the run's own Backup stands: a taken name replaces nothing. One that
    // finished meanwhile is kept (retention decides about it like any other).
    const replaced: string[] = [];
    const finished: string[] = [];
    if (made !== 'foreign')
      for (const old of active.filter((b) => decision.replace.includes(b.name))) {
        ctx.fence();
        const r = await deleteWhileUnfinished(ctx.kube, namespace, old.name, old.uid);
        if (r === 'deleted') replaced.push(old.name);
        if (r === 'finished') finished.push(old.name);
      }
    result =
      made === 'foreign'
        ? {
            type: 'LastRun',
            status: 'False',
            reason: RunReason.nameTaken,
            message: `the run at ${at.toISOString()} was skipped: a Backup named ${name} exists and is not this schedule's; delete or rename it`,
          }
        : {
            type: 'LastRun',
            status: 'True',
            reason: decision.reason,
            message: `Backup ${name} for the run at ${at.toISOString()}${replaced.length > 0 ? `, replacing ${replaced.join(', ')} (concurrencyPolicy Replace)` : ''}${finished.length > 0 ? `; ${finished.join(', ')} finished meanwhile and ${finished.length > 1 ? 'are' : 'is'} kept` : ''}${earlier}`,
          };
  } else {
    result = { type: 'LastRun', status: 'False', reason: decision.reason, message: decision.message };
  }

  const written = await loaded.writeStatus((s) => {
    // Recorded meanwhile (another delivery of this tick): neither again nor counted twice.
    if (s.lastScheduleTime && new Date(s.lastScheduleTime) >= at) return undefined;
    ctx.fence();
    return {
      ...s,
      lastScheduleTime: rfc3339(at),
      missedRuns: (s.missedRuns ?? 0) + decision.missed,
      conditions: setCondition(
        s.conditions as Condition[] | undefined,
        result,
        schedule.metadata.generation,
        now,
      ),
    };
  });
  if (written?.status?.lastScheduleTime !== rfc3339(at)) return;
  ctx.log.info('run', { scheduledTime: at.toISOString(), reason: result.reason, missed: decision.missed });
  await recorder.record({
    regarding,
    type: result.status === 'True' ? 'Normal' : 'Warning',
    reason: result.reason,
    action: 'Run',
    note: result.message,
  });
};
