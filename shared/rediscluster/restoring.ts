import type { RedisCluster } from '../api/generated.ts';

/** The RedisCluster condition that holds off failover, rollouts and other restores meanwhile. */
export const RESTORING = 'Restoring';

/** `Restore <name> `: how the condition's message names its Restore (names hold no spaces). */
export const restoringMessageFor = (restore: string) => `Restore ${restore} `;

/** The Restore a Restoring=True condition names, whatever its age. */
export const markedRestore = (rc: Pick<RedisCluster, 'status'>): string | undefined => {
  const c = (rc.status?.conditions ?? []).find((x) => x.type === RESTORING);
  const prefix = 'Restore ';
  if (c?.status !== 'True' || !c.message?.startsWith(prefix)) return undefined;
  const name = c.message.slice(prefix.length).split(' ')[0];
  return name && c.message.startsWith(restoringMessageFor(name)) ? name : undefined;
};

/**
 * How long a Restoring=True condition holds failovers and rollouts back. The restore function
 * holds the cluster's lock while it loads (health and reconcile do not run then); this covers the
 * time after it died mid-load until its redelivery looks at the master (about ackWait). Bounded:
 * a restore function that never comes back must not keep a cluster from failing over forever.
 */
export const RESTORING_HOLD_MS = 5 * 60_000;

/** A restore is under way (the restore function says so, recently enough to believe it). */
export const restoringNow = (rc: Pick<RedisCluster, 'status'>, now: Date): string | undefined => {
  const c = (rc.status?.conditions ?? []).find((x) => x.type === RESTORING);
  if (c?.status !== 'True') return undefined;
  const since = Date.parse(String(c.lastTransitionTime ?? ''));
  if (!Number.isFinite(since) || now.getTime() - since > RESTORING_HOLD_MS) return undefined;
  return c.message ?? 'a restore is under way';
};
