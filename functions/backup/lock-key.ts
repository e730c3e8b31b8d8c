import { objectKeyOf } from '../../shared/events/subjects.ts';
import type { LockKey } from '../../shared/runtime/handler.ts';

/**
 * A Backup's run locks its RedisCluster (the watcher names it in the `cluster` extension): a
 * backup never runs beside that cluster's reconcile or health, nor beside another backup of it.
 * An event without the extension (a deletion known only from the watcher's cursor) locks the
 * Backup itself: there is nothing left to back up then.
 */
export const lockKey: LockKey = (event) => {
  const e = event as unknown as Record<string, unknown>;
  const text = (k: string) => (typeof e[k] === 'string' ? (e[k] as string) : '');
  return text('cluster')
    ? objectKeyOf({ kind: 'RedisCluster', namespace: text('namespace'), name: text('cluster') })
    : objectKeyOf({ kind: text('kind'), namespace: text('namespace'), name: text('name') });
};
