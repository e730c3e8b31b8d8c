import { CloudEvent } from 'cloudevents';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { EventType } from '../../shared/events/types.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import type { Auth } from '../../shared/rediscluster/auth.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

/**
 * Secrets are not watched: that would take list and watch on every Secret of the cluster. Health
 * reads the password on every tick, so it is the one to notice a new one; it asks reconcile to
 * roll it, once, unless reconcile is rolling one already (it then runs again by itself).
 */
export const askForPasswordRotation = async (
  ctx: HandlerContext,
  rc: RedisCluster,
  auth: Auth,
  source: string,
): Promise<boolean> => {
  if (auth.desired === auth.applied) return false;
  const reconciled = findCondition(rc.status?.conditions as Condition[] | undefined, 'Reconciled');
  if (reconciled?.reason === 'RotatingPassword') return false;
  const namespace = rc.metadata.namespace ?? '';
  const at = ctx.clock().toISOString();
  await ctx.publisher.publish(
    new CloudEvent({
      specversion: '1.0',
      id: eventId(rc.metadata.uid, 'reconcile-requested', 'PasswordChanged', at),
      source,
      type: EventType.clusterReconcile,
      subject: `namespaces/${namespace}/redisclusters/${rc.metadata.name}`,
      time: at,
      datacontenttype: 'application/json',
      kind: 'RedisCluster',
      namespace,
      name: rc.metadata.name ?? '',
      data: { reason: 'PasswordChanged', message: 'the password Secret holds a new password' },
    }),
  );
  ctx.log.info('asked reconcile to roll a new password');
  return true;
};
