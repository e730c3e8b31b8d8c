import type { Backup } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { type RetentionDecision, selectRetention } from '../../shared/backup/retention.ts';
import { type Condition, type ConditionInput, setCondition } from '../../shared/kube/conditions.ts';
import type { EventRecorder } from '../../shared/kube/events.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { fireAfter, type ScheduleClock } from './clock.ts';
import {
  clusterExists,
  deleteBackup,
  type LoadedSchedule,
  listScheduleBackups,
  releaseFromOwner,
} from './kube.ts';
import { scheduleInForce } from './run.ts';
import { type OwnedBackup, ownedBackupOf, readyCondition, retentionCondition, summarize } from './summary.ts';

type SyncOptions = {
  ctx: HandlerContext;
  loaded: LoadedSchedule;
  clock: ScheduleClock;
  now: Date;
  recorder: EventRecorder;
  regarding: Parameters<EventRecorder['record']>[0]['regarding'];
};

/**
 * Retention for each cluster's Backups on their own: after spec.cluster changed, the rules (and
 * "the newest Completed is never deleted") hold for the old cluster's backups as for the new
 * one's, and the new cluster's first backups never push out the old cluster's last.
 */
export const retainPerCluster = (
  backups: readonly OwnedBackup[],
  select: (of: OwnedBackup[]) => RetentionDecision,
): RetentionDecision => {
  const groups = Map.groupBy(backups, (b) => b.cluster);
  // With no Backups yet the policy is still judged: a bad one says so before the first run.
  const decisions = groups.size > 0 ? [...groups.values()].map(select) : [select([])];
  return { keep: decisions.flatMap((d) => d.keep), delete: decisions.flatMap((d) => d.delete) };
};

/**
 * Older Backups off the schedule's owner reference (releaseFromOwner). Never in retention's way:
 * a failure is a Warning on the schedule (until it is fixed, deleting the schedule deletes them).
 */
const releaseAll = async ({ ctx, loaded, recorder, regarding }: SyncOptions, backups: readonly Backup[]) => {
  for (const b of backups) {
    ctx.fence();
    try {
      if (await releaseFromOwner(ctx.kube, loaded.schedule, b))
        ctx.log.info('released from the owner reference', { backup: b.metadata.name });
    } catch (error) {
      ctx.log.warn('not released from the owner reference', { backup: b.metadata.name, error });
      await recorder.record({
        regarding,
        type: 'Warning',
        reason: 'NotReleased',
        action: 'Release',
        note: `Backup ${b.metadata.name} still names this schedule as its owner, so deleting the schedule would delete it: ${(error as Error).message}`,
      });
    }
  }
};

/** Deletes what retention selects; the Retention condition says what it kept and why. */
const prune = async (
  { ctx, loaded, clock, now, recorder, regarding }: SyncOptions,
  backups: readonly OwnedBackup[],
): Promise<{ condition: ConditionInput; pruned: Set<string> }> => {
  const { spec, metadata } = loaded.schedule;
  const pruned = new Set<string>();
  if (!clock.zoneKnown)
    return {
      pruned,
      condition: {
        type: 'Retention',
        status: 'False',
        reason: 'NotApplied',
        message: `not applied: ${clock.problem?.message}`,
      },
    };
  let decision: ReturnType<typeof selectRetention>;
  try {
    decision = retainPerCluster(
      backups.filter((b) => !b.deleting),
      (of) => selectRetention(of, spec.retention, { now, timeZone: clock.timeZone }),
    );
  } catch (error) {
    // A maxAge under a minute, or one the API server's pattern would have refused.
    return {
      pruned,
      condition: {
        type: 'Retention',
        status: 'False',
        reason: 'InvalidRetention',
        message: `spec.retention: ${(error as Error).message}; nothing is pruned until it is corrected`,
      },
    };
  }
  for (const d of decision.delete) {
    const b = backups.find((x) => x.name === d.name);
    if (!b) continue;
    // A correction of spec.retention made while this pass deletes (a tightened rule loosened
    // again) stops it: the change's own run prunes by the new rules.
    if ((await loaded.generationNow()) !== metadata.generation) {
      ctx.log.info('spec changed while pruning: stopped', { pruned: pruned.size });
      break;
    }
    ctx.fence();
    const deleted = await deleteBackup(ctx.kube, metadata.namespace ?? '', b.name, b.uid);
    pruned.add(b.name);
    if (!deleted) continue; // another run of this schedule got there first, and said so
    ctx.log.info('pruned', { backup: b.name, reason: d.reason });
    await recorder.record({
      regarding,
      type: 'Normal',
      reason: 'Pruned',
      action: 'Retention',
      note: `deleted Backup ${b.name} (${d.reason})`,
    });
  }
  return { pruned, condition: retentionCondition(spec.retention, decision) };
};

/**
 * Brings the schedule up to date with its Backups: prunes what retention selects (the Backup's
 * own finalizer removes the stored object), then writes active, lastSuccessfulBackup,
 * nextScheduleTime and the Ready and Retention conditions. Returns the status written.
 */
export const sync = async (o: SyncOptions) => {
  const { ctx, loaded, clock, now } = o;
  const { schedule } = loaded;
  const { spec } = schedule;
  const namespace = schedule.metadata.namespace ?? '';
  const next = spec.suspend ? undefined : fireAfter(clock, now);
  const generation = schedule.metadata.generation;
  const written = await loaded.writeObserved(
    async (current) => {
      // The spec changed since this run read it: retention by the old rules could delete what the
      // new ones keep. The change's own event runs by the new rules.
      if (current.metadata.generation !== generation) {
        ctx.log.info('spec changed meanwhile: not pruned', {
          read: generation,
          now: current.metadata.generation,
        });
        return undefined;
      }
      const listed = await listScheduleBackups(ctx.kube, schedule);
      await releaseAll(o, listed);
      const backups = listed.map(ownedBackupOf);
      const exists = await clusterExists(ctx.kube, namespace, clusterRefOf(spec));
      const { condition, pruned } = await prune(o, backups);
      return { summary: summarize(backups.filter((b) => !pruned.has(b.name))), exists, retention: condition };
    },
    (s, { summary, exists, retention }) => {
      const ready = readyCondition({
        spec,
        namespace,
        clockProblem: clock.problem,
        next,
        timeZone: clock.timeZone,
        clusterExists: exists,
      });
      const { active: _a, lastSuccessfulBackup: _l, nextScheduleTime: _n, ...rest } = s;
      let conditions = setCondition(s.conditions as Condition[] | undefined, ready, generation, now);
      conditions = setCondition(conditions, retention, generation, now);
      ctx.fence();
      return {
        ...rest,
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
        ...(summary.active.length > 0 ? { active: summary.active } : {}),
        ...(summary.lastSuccessfulBackup ? { lastSuccessfulBackup: summary.lastSuccessfulBackup } : {}),
        ...(next instanceof Date ? { nextScheduleTime: rfc3339(next) } : {}),
        schedule: scheduleInForce({ ...schedule, status: s }, rfc3339(now)),
        conditions,
      };
    },
  );
  return written.status ?? {};
};
