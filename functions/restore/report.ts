import { CloudEvent } from 'cloudevents';
import type { Restore } from '../../shared/api/generated.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { EventType } from '../../shared/events/types.ts';
import { handlerRecorder, recordWithCluster, regardingOf } from '../../shared/kube/events.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import type { Run } from './run.ts';

/** An Event about the Restore and, with `cluster`, one about its RedisCluster (best effort). */
export const recordEvent = (
  run: Run,
  e: { type: 'Normal' | 'Warning'; reason: string; note: string },
  o: { cluster?: boolean } = {},
) =>
  recordWithCluster(
    handlerRecorder(run.ctx, 'restore'),
    {
      regarding: run.loaded.regarding,
      cluster: o.cluster ? regardingOf(run.rc, run.loaded.key.namespace) : undefined,
      action: 'Restore',
    },
    e,
  );

/**
 * `dev.tideway.restore.completed|failed` of a Restore, once per Restore (the id is the
 * Restore's): a RolledBack restore is a failed one, its data says so.
 */
export const restoreOutcome = (
  restore: Restore,
  source: string,
  outcome: 'completed' | 'failed',
  data: Record<string, unknown>,
  time: Date,
) => {
  const [namespace, name] = [restore.metadata.namespace ?? '', restore.metadata.name ?? ''];
  const cluster = restore.spec.cluster.name;
  return new CloudEvent({
    specversion: '1.0',
    id: eventId(restore.metadata.uid, 'restore', outcome),
    source,
    type: outcome === 'completed' ? EventType.restoreCompleted : EventType.restoreFailed,
    subject: `namespaces/${namespace}/restores/${name}`,
    time: time.toISOString(),
    datacontenttype: 'application/json',
    kind: 'Restore',
    namespace,
    name,
    cluster,
    data: { namespace, restore: name, cluster, ...data },
  });
};

/** A Restore's outcome on the bus. */
export const publishOutcome = (run: Run, outcome: 'completed' | 'failed', data: Record<string, unknown>) =>
  run.ctx.publisher.publish(
    restoreOutcome(run.loaded.restore, run.event.source, outcome, data, run.ctx.clock()),
  );

export type Outcome = 'completed' | 'failed' | 'rolledback';

/** Metrics of a finished restore, per cluster: outcomes, duration, bytes, keys, last success. */
export const recordMetrics = (
  ctx: Pick<HandlerContext, 'metrics' | 'clock'>,
  o: {
    namespace: string;
    cluster: string;
    outcome: Outcome;
    seconds?: number;
    rdbBytes?: number;
    keys?: number;
  },
) => {
  const labels = { namespace: o.namespace, cluster: o.cluster };
  ctx.metrics.inc('tideway_restores_total', { ...labels, outcome: o.outcome });
  if (o.seconds !== undefined) ctx.metrics.observe('tideway_restore_duration_seconds', o.seconds, labels);
  if (o.rdbBytes !== undefined) ctx.metrics.inc('tideway_restore_loaded_bytes_total', labels, o.rdbBytes);
  if (o.outcome !== 'completed') return;
  ctx.metrics.set(
    'tideway_restore_last_success_timestamp_seconds',
    Math.floor(ctx.clock().getTime() / 1000),
    labels,
  );
  if (o.keys !== undefined) ctx.metrics.set('tideway_restore_last_keys', o.keys, labels);
};
