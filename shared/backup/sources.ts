import type { Instance } from '../rediscluster/probe.ts';
import { mostAdvancedFirst } from '../rediscluster/promotion.ts';

export type SourcePreference = 'prefer-replica' | 'master';

/** The serving master: the recorded one, answering as a master. */
const servingMaster = (instances: readonly Instance[], master: string | undefined) =>
  instances.find(
    (i) => i.pod === master && !!i.ip && !i.terminating && !i.error && i.replication?.role === 'master',
  );

/**
 * Where to take a snapshot from, in the order to try them. `prefer-replica`: replicas in sync with
 * the serving master (link up, no sync running), most advanced first, so the master's memory and
 * fork are spared; the master last, only for when no replica can serve (a single instance, or
 * every replica lost mid-stream). `master`: the master only. An instance on its way out, one that
 * does not answer, and a replica of anything but the serving master never qualify: a snapshot of
 * stale or foreign data would be a backup that lies.
 */
export const backupSources = (
  instances: readonly Instance[],
  o: { source: SourcePreference; master: string | undefined },
): Instance[] => {
  const m = servingMaster(instances, o.master);
  if (o.source === 'master') return m ? [m] : [];
  const replicas = instances
    .filter((i) => {
      const r = i.replication;
      return (
        !!m &&
        i.pod !== m.pod &&
        !!i.ip &&
        !i.terminating &&
        !i.error &&
        r?.role === 'replica' &&
        r.linkUp &&
        !r.syncInProgress &&
        r.masterHost === m.ip
      );
    })
    .sort(mostAdvancedFirst);
  return [...replicas, ...(m ? [m] : [])];
};

/** Why no instance qualifies, in words for the status. */
export const noSourceReason = (
  instances: readonly Instance[],
  o: { source: SourcePreference; master: string | undefined },
) => {
  if (!o.master) return 'the cluster has no master yet';
  const m = instances.find((i) => i.pod === o.master);
  if (!m) return `its master ${o.master} has no pod`;
  return `its master ${o.master} does not serve (${m.error ?? m.replication?.role ?? 'not answering'})${o.source === 'prefer-replica' ? ' and no replica is in sync with it' : ''}`;
};
