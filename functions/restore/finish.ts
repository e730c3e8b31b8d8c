import type { ConditionInput } from '../../shared/kube/conditions.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import { done, type Outcome } from '../../shared/runtime/handler.ts';
import { endRestoring } from './cluster-status.ts';
import { publishOutcome, recordEvent, recordMetrics } from './report.ts';
import { CONDITION, DATA_CONDITION, formatDuration, type Run, withConditions } from './run.ts';

/** Which data the cluster holds when a Restore ends. */
export type ClusterData =
  | 'restored'
  | 'untouched'
  | 'rolledBack'
  | 'unknown'
  | 'interrupted'
  | 'overMaxmemory';

export const dataCondition = (
  data: ClusterData,
  o: { source: string; safetyBackup?: string | undefined },
): ConditionInput => {
  switch (data) {
    case 'restored':
      return {
        type: DATA_CONDITION,
        status: 'True',
        reason: 'Restored',
        message: `the cluster holds the data of ${o.source}`,
      };
    case 'untouched':
      return {
        type: DATA_CONDITION,
        status: 'False',
        reason: 'Untouched',
        message: 'the cluster holds the data it had before this restore: none of the backup was loaded',
      };
    case 'rolledBack':
      return {
        type: DATA_CONDITION,
        status: 'False',
        reason: 'RolledBack',
        message: `the cluster holds the data of safety backup ${o.safetyBackup ?? ''}, taken just before this restore (writes after it are lost)`,
      };
    case 'unknown':
      return {
        type: DATA_CONDITION,
        status: 'Unknown',
        reason: 'Unknown',
        message: 'the master was given a whole RDB it did not load: its data may be incomplete; check it',
      };
    case 'interrupted':
      return {
        type: DATA_CONDITION,
        status: 'Unknown',
        reason: 'Interrupted',
        message:
          'this restore ended while a load was under way: the master may hold its own data, part of the backup, or all of it; check it',
      };
    case 'overMaxmemory':
      return {
        type: DATA_CONDITION,
        status: 'Unknown',
        reason: 'OverMaxmemory',
        message: `the master loaded the data of ${o.source}, more than its maxmemory holds, and there was no safety backup to roll back to: Redis evicts keys of it (or refuses writes that need memory) until maxmemory is raised; check it`,
      };
  }
};

const secondsSince = (run: Run, startedAt: string | undefined) =>
  startedAt ? Math.max(0, (run.ctx.clock().getTime() - new Date(startedAt).getTime()) / 1000) : undefined;

/**
 * A Restore that ended without the backup's data in place: Failed (or RolledBack), the reason and
 * what to do, which data the cluster holds now, Events, the `dev.tideway.restore.failed`
 * CloudEvent. `marked`: the cluster carries Restoring=True from this Restore, to end.
 */
export const failRestore = async (
  run: Run,
  f: {
    reason: string;
    message: string;
    data: ClusterData;
    phase?: 'Failed' | 'RolledBack';
    /** The phase it failed in, for the message (Verifying, SafetyBackup, Restoring). */
    at?: string;
    marked?: boolean;
    history?: { id: string; offset: number; previous: string[] };
    keys?: number;
  },
): Promise<Outcome> => {
  const { restore } = run.loaded;
  const phase = f.phase ?? 'Failed';
  const at = f.at ?? restore.status?.phase ?? 'Pending';
  const message = f.message.slice(0, 4000);
  const source = restore.status?.source ?? '';
  const safetyBackup = restore.status?.safetyBackup;
  const now = run.ctx.clock();
  // The cluster first, then the Restore: a crash between the two leaves a Restore that is not
  // finished yet rather than a finished one whose cluster still says Restoring.
  if (f.marked)
    await endRestoring(run, phase === 'RolledBack' ? 'RolledBack' : 'RestoreFailed', message, f.history);
  run.ctx.fence();
  await run.loaded.writeStatus((s) =>
    withConditions(
      {
        ...s,
        phase,
        completedAt: rfc3339(now),
        error: { reason: f.reason, message },
        ...(f.keys !== undefined ? { keys: f.keys } : {}),
        observedGeneration: restore.metadata.generation,
      },
      [
        {
          type: CONDITION,
          status: 'False',
          reason: f.reason,
          message: `${phase === 'RolledBack' ? 'rolled back' : `failed at ${at}`}: ${message}`.slice(0, 4000),
        },
        dataCondition(f.data, { source, safetyBackup }),
      ],
      restore.metadata.generation,
      now,
    ),
  );
  run.ctx.log.warn('restore failed', { reason: f.reason, message, phase, data: f.data });
  await recordEvent(
    run,
    {
      type: 'Warning',
      reason: phase === 'RolledBack' ? 'RolledBack' : 'Failed',
      note: `${f.reason}: ${message}`,
    },
    { cluster: true },
  );
  await publishOutcome(run, 'failed', {
    phase,
    at,
    reason: f.reason,
    message,
    data: f.data,
    source,
    ...(safetyBackup ? { safetyBackup } : {}),
  });
  const seconds = secondsSince(run, restore.status?.startedAt);
  recordMetrics(run.ctx, {
    namespace: run.loaded.key.namespace,
    cluster: restore.spec.cluster.name,
    outcome: phase === 'RolledBack' ? 'rolledback' : 'failed',
    ...(seconds !== undefined ? { seconds } : {}),
  });
  return done;
};

/** A Restore whose data is in: Completed, with the keys, Events, the CloudEvent, metrics. */
export const completeRestore = async (
  run: Run,
  o: {
    keys: number;
    rdbBytes: number;
    sync: string;
    attempt: number;
    history: { id: string; offset: number; previous: string[] };
  },
): Promise<Outcome> => {
  const { restore } = run.loaded;
  const now = run.ctx.clock();
  const source = restore.status?.source ?? '';
  const started = restore.status?.startedAt;
  const took = started ? formatDuration(now.getTime() - new Date(started).getTime()) : '';
  const tries =
    o.attempt > 1 ? ` on load ${o.attempt} (the loads before were interrupted and changed nothing)` : '';
  const message = `${o.keys} keys of ${source} loaded into ${restore.status?.safetyBackup ? `the master (safety backup ${restore.status.safetyBackup}) ` : 'the master '}${took ? `in ${took}` : ''}${tries}; ${o.sync}`;
  // The cluster's history first (see failRestore).
  await endRestoring(run, 'Restored', `restored ${source}: ${o.sync}`, o.history);
  run.ctx.fence();
  await run.loaded.writeStatus((s) => {
    const { error: _e, ...rest } = s;
    return withConditions(
      {
        ...rest,
        phase: 'Completed',
        completedAt: rfc3339(now),
        keys: o.keys,
        progress: { bytes: o.rdbBytes, percent: 100 },
        observedGeneration: restore.metadata.generation,
      },
      [
        { type: CONDITION, status: 'True', reason: 'Completed', message: message.slice(0, 4000) },
        dataCondition('restored', { source }),
      ],
      restore.metadata.generation,
      now,
    );
  });
  run.ctx.log.info('restore completed', { source, keys: o.keys, rdbBytes: o.rdbBytes });
  await recordEvent(run, { type: 'Normal', reason: 'Completed', note: message }, { cluster: true });
  await publishOutcome(run, 'completed', {
    phase: 'Completed',
    source,
    keys: o.keys,
    rdbBytes: o.rdbBytes,
    completedAt: rfc3339(now),
    ...(restore.status?.safetyBackup ? { safetyBackup: restore.status.safetyBackup } : {}),
  });
  const seconds = secondsSince(run, started);
  recordMetrics(run.ctx, {
    namespace: run.loaded.key.namespace,
    cluster: restore.spec.cluster.name,
    outcome: 'completed',
    rdbBytes: o.rdbBytes,
    keys: o.keys,
    ...(seconds !== undefined ? { seconds } : {}),
  });
  return done;
};
