import type { CloudEvent } from 'cloudevents';
import { isOutcome, loadCluster } from '../../shared/rediscluster/load.ts';
import type { HandlerContext, Outcome } from '../../shared/runtime/handler.ts';
import { realPorts } from './ports.ts';
import { runReconcile } from './run.ts';

/**
 * reconcile: makes a RedisCluster's world match its spec — owned objects by server-side apply,
 * the replication topology over the network at pod IPs, role labels the Services follow — and
 * writes down what it found. Level-triggered: the event only names the object; everything is
 * re-read, and running it twice changes nothing.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const loaded = await loadCluster(event, ctx);
  if (isOutcome(loaded)) return loaded;
  return runReconcile(loaded, ctx, realPorts(ctx));
};
