import { CloudEvent } from 'cloudevents';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { EventType } from '../../shared/events/types.ts';
import { markedRestore } from '../../shared/rediscluster/restoring.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

/** At most one look a Restore per this long (one event id per slot; JetStream drops repeats). */
export const RESTORE_LOOK_MS = 30_000;

/**
 * While a cluster carries Restoring=True, the Restore it names is run at least every
 * RESTORE_LOOK_MS: a Restore the runtime gave up on mid-load left the master following a feed
 * that is gone (read-only), and only its own next run settles that — which nothing else brings,
 * since status changes are no events. A look at a Restore that goes on is one run more, which
 * re-reads everything; health runs only while no restore run holds the cluster.
 */
export const lookAtMarkedRestore = async (
  ctx: Pick<HandlerContext, 'clock' | 'publisher'>,
  rc: RedisCluster,
  source: string,
): Promise<string | undefined> => {
  const name = markedRestore(rc);
  if (!name) return undefined;
  const namespace = rc.metadata.namespace ?? '';
  const now = ctx.clock();
  const slot = Math.floor(now.getTime() / RESTORE_LOOK_MS);
  await ctx.publisher.publish(
    new CloudEvent({
      specversion: '1.0',
      id: eventId(EventType.restoreTick, rc.metadata.uid, name, slot),
      source,
      type: EventType.restoreTick,
      subject: `namespaces/${namespace}/restores/${name}`,
      time: now.toISOString(),
      datacontenttype: 'application/json',
      kind: 'Restore',
      namespace,
      name,
      // The run locks the cluster, as the Restore's own events do (clusterLockKey).
      cluster: rc.metadata.name ?? '',
      clusterkind: 'RedisCluster',
      data: { kind: 'Restore', namespace, name, cluster: rc.metadata.name },
    }),
  );
  return name;
};
