import type { CloudEvent } from 'cloudevents';
import { isOutcome, loadCluster } from '../../shared/rediscluster/load.ts';
import type { HandlerContext, Outcome } from '../../shared/runtime/handler.ts';
import { realPorts } from './ports.ts';
import { runHealth } from './run.ts';

/**
 * health: on the watcher's health ticks (and on changes of the cluster's pods, to notice a lost
 * master at once), probes every instance, writes status.nodes and the Healthy and Ready
 * conditions, and fails over when the master has been unreachable for spec.failover.after.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const loaded = await loadCluster(event, ctx);
  if (isOutcome(loaded)) return loaded;
  return runHealth(loaded, ctx, realPorts(ctx), { source: event.source });
};
