import { objectKeyOf } from '../../shared/events/subjects.ts';
import type { LockKey } from '../../shared/runtime/handler.ts';

/**
 * A Restore's run locks its RedisCluster (the watcher names it in the `cluster` extension): while
 * it verifies or loads, that cluster's reconcile, health (so no failover, no rollout) and backups
 * wait, and so does any other Restore of it. An event without the extension locks the Restore
 * itself: there is no cluster to act on then.
 */
export const lockKey: LockKey = (event) => {
  const e = event as unknown as Record<string, unknown>;
  const text = (k: string) => (typeof e[k] === 'string' ? (e[k] as string) : '');
  return text('cluster')
    ? objectKeyOf({ kind: 'RedisCluster', namespace: text('namespace'), name: text('cluster') })
    : objectKeyOf({ kind: text('kind'), namespace: text('namespace'), name: text('name') });
};
