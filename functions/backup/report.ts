import { CloudEvent } from 'cloudevents';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import type { BackupStatus, LoadedBackup } from '../../shared/backup/kube.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { EventType } from '../../shared/events/types.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { handlerRecorder, recordWithCluster, regardingOf } from '../../shared/kube/events.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import type { Taken } from './run.ts';

/** The condition that says how a Backup ended (also the runtime's failureCondition). */
export const CONDITION = 'Completed';

export type Failure = { reason: string; message: string };

/** `12.3s`: how long, for people. */
export const formatDuration = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Percent of a known total, never 100 before the end. */
export const percentOf = (bytes: number, total: number | undefined) =>
  total ? Math.min(99, Math.floor((bytes * 100) / total)) : undefined;

export const withCondition = (
  s: BackupStatus,
  status: 'True' | 'False',
  f: Failure,
  generation: number | undefined,
  now: Date,
): BackupStatus => ({
  ...s,
  conditions: setCondition(
    s.conditions as Condition[] | undefined,
    { type: CONDITION, status, ...f },
    generation,
    now,
  ),
});

/** Events about the Backup and about its cluster (best effort). */
export const recordEvents = (
  ctx: HandlerContext,
  loaded: LoadedBackup,
  cluster: { apiVersion: string; kind: string; metadata: { name?: string; uid?: string } } | undefined,
  e: { type: 'Normal' | 'Warning'; reason: string; note: string },
) =>
  recordWithCluster(
    handlerRecorder(ctx, 'backup'),
    {
      regarding: loaded.regarding,
      cluster: cluster && regardingOf(cluster, loaded.key.namespace),
      action: 'Backup',
    },
    e,
  );

/**
 * `dev.tideway.backup.completed|failed` of a Backup: the id is the Backup's, so it is one event
 * however often it is published.
 */
export const backupOutcome = (
  loaded: Pick<LoadedBackup, 'backup' | 'key'>,
  source: string,
  outcome: 'completed' | 'failed',
  data: Record<string, unknown>,
  time: Date,
) =>
  new CloudEvent({
    specversion: '1.0',
    id: eventId(loaded.backup.metadata.uid, 'backup', outcome),
    source,
    type: outcome === 'completed' ? EventType.backupCompleted : EventType.backupFailed,
    subject: `namespaces/${loaded.key.namespace}/backups/${loaded.key.name}`,
    time: time.toISOString(),
    datacontenttype: 'application/json',
    kind: 'Backup',
    namespace: loaded.key.namespace,
    name: loaded.key.name,
    // As the watcher's events of a Backup carry them: a handler's lockKey reads both.
    cluster: loaded.backup.spec.cluster.name,
    clusterkind: clusterRefOf(loaded.backup.spec).kind,
    data: {
      namespace: loaded.key.namespace,
      backup: loaded.key.name,
      cluster: loaded.backup.spec.cluster.name,
      ...data,
    },
  });

/** A Backup's outcome on the bus. */
const publishOutcome = (
  ctx: HandlerContext,
  loaded: LoadedBackup,
  source: string,
  outcome: 'completed' | 'failed',
  data: Record<string, unknown>,
) => ctx.publisher.publish(backupOutcome(loaded, source, outcome, data, ctx.clock()));

/**
 * The outcome the status records, on the bus: after the status is written, and again whenever
 * the handler meets a finished Backup, so a publish that failed is made up for (at least once;
 * within JetStream's duplicate window a copy stores nothing new).
 */
export const announce = async (
  ctx: HandlerContext,
  loaded: LoadedBackup,
  source: string,
  s: BackupStatus | undefined,
) => {
  if (s?.phase === 'Completed')
    await publishOutcome(ctx, loaded, source, 'completed', {
      location: s.location,
      size: s.size,
      rdbSize: s.rdbSize,
      sha256: s.sha256,
      redisVersion: s.redisVersion,
      source: s.source,
      completedAt: s.completedAt,
    });
  else if (s?.phase === 'Failed')
    await publishOutcome(ctx, loaded, source, 'failed', {
      reason: s.error?.reason,
      message: s.error?.message,
    });
};

/** The status of a completed backup: where it is, what it holds, how long it took. */
export const completedStatus = (
  s: BackupStatus,
  t: Taken,
  o: { started: Date; now: Date; generation: number | undefined; store: BackupStatus['store'] },
): BackupStatus => {
  const { error: _error, pendingAbort: _pending, ...rest } = s;
  return withCondition(
    {
      ...rest,
      phase: 'Completed',
      completedAt: rfc3339(o.now),
      ...(t.manifest.takenAt ? { takenAt: rfc3339(new Date(t.manifest.takenAt)) } : {}),
      location: t.location,
      size: t.size,
      rdbSize: t.rdbSize,
      sha256: t.sha256,
      ...(t.manifest.redis ? { redisVersion: t.manifest.redis.version } : {}),
      ...(t.manifest.etcd ? { etcdVersion: t.manifest.etcd.version } : {}),
      duration: formatDuration(o.now.getTime() - o.started.getTime()),
      source: t.source.pod,
      progress: { bytes: t.rdbSize, percent: 100 },
      ...(o.store ? { store: o.store } : {}),
      observedGeneration: o.generation,
    },
    'True',
    {
      reason: 'Completed',
      message: `${t.size} bytes stored at ${t.location} (${t.manifest.etcd ? 'etcd snapshot' : 'RDB'} ${t.rdbSize} bytes, from ${t.source.pod})`,
    },
    o.generation,
    o.now,
  );
};

/** Metrics of a finished backup, per cluster: last success, duration, bytes. */
export const recordMetrics = (
  ctx: HandlerContext,
  loaded: LoadedBackup,
  t: Taken | undefined,
  ms: number,
) => {
  const labels = { namespace: loaded.key.namespace, cluster: loaded.backup.spec.cluster.name };
  ctx.metrics.inc('tideway_backups_total', { ...labels, outcome: t ? 'completed' : 'failed' });
  if (!t) return;
  ctx.metrics.set(
    'tideway_backup_last_success_timestamp_seconds',
    Math.floor(ctx.clock().getTime() / 1000),
    labels,
  );
  ctx.metrics.observe('tideway_backup_duration_seconds', ms / 1000, labels);
  ctx.metrics.inc('tideway_backup_stored_bytes_total', labels, t.size);
  ctx.metrics.set('tideway_backup_last_size_bytes', t.size, labels);
  ctx.metrics.set('tideway_backup_last_rdb_bytes', t.rdbSize, labels);
};
