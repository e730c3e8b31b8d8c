import type { RedisCluster } from '../api/generated.ts';

/**
 * How long a Restoring=True condition holds failovers and rollouts back. The restore function
 * holds the cluster's lock while it loads (health and reconcile do not run then); this covers the
 * time after it died mid-load until its redelivery looks at the master (about ackWait). Bounded:
 * a restore function that never comes back must not keep a cluster from failing over forever.
 */
export const RESTORING_HOLD_MS = 5 * 60_000;

/** A restore is under way (the restore function says so, recently enough to believe it). */
export const restoringNow = (rc: Pick<RedisCluster, 'status'>, now: Date): string | undefined => {
  const c = (rc.status?.conditions ?? []).find((x) => x.type === 'Restoring');
  if (c?.status !== 'True') return undefined;
  const since = Date.parse(String(c.lastTransitionTime ?? ''));
  if (!Number.isFinite(since) || now.getTime() - since > RESTORING_HOLD_MS) return undefined;
  return c.message ?? 'a restore is under way';
};
