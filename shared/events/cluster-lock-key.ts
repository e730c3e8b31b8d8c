import { DEFAULT_CLUSTER_KIND } from '../engines/index.ts';
import type { LockKey } from '../runtime/handler.ts';
import { objectKeyOf } from './subjects.ts';

/**
 * For handlers of objects that act on a cluster (Backup, Restore): lock the cluster the watcher
 * names in the event's `cluster` and `clusterkind` extensions, so a run never goes beside that
 * cluster's reconcile, health (no failover, no rollout) or another such run. An event without the
 * extension (a deletion known only from the watcher's cursor) locks the object itself.
 */
export const clusterLockKey: LockKey = (event) => {
  const e = event as unknown as Record<string, unknown>;
  const text = (k: string) => (typeof e[k] === 'string' ? (e[k] as string) : '');
  return text('cluster')
    ? objectKeyOf({
        kind: text('clusterkind') || DEFAULT_CLUSTER_KIND,
        namespace: text('namespace'),
        name: text('cluster'),
      })
    : objectKeyOf({ kind: text('kind'), namespace: text('namespace'), name: text('name') });
};
