import { type Condition, findCondition, setCondition } from '../../shared/kube/conditions.ts';
import { historyIds } from '../../shared/rediscluster/promotion.ts';
import { RESTORING, restoringMessageFor } from '../../shared/rediscluster/restoring.ts';
import { type ClusterStatus, writeClusterStatus } from './kube.ts';
import type { Run } from './run.ts';

const set = (s: ClusterStatus, run: Run, status: 'True' | 'False', reason: string, message: string) => ({
  ...s,
  conditions: setCondition(
    s.conditions as Condition[] | undefined,
    { type: RESTORING, status, reason, message },
    run.rc.metadata.generation,
    run.ctx.clock(),
  ),
});

/** Restoring=True, naming the Restore, before the master's data is touched. */
export const markRestoring = async (run: Run, what: string) => {
  run.ctx.fence();
  await writeClusterStatus(run.ctx.kube, run.rc, (s) =>
    set(s, run, 'True', 'Restoring', `${restoringMessageFor(run.loaded.key.name)}${what}`),
  );
};

/**
 * Restoring=False with how it ended. After data was loaded the cluster's replication history is
 * the loaded data's: the master's new id, and the feed's id it continued from. The history before
 * it is dropped: an instance that still holds the replaced data is of another history now, and is
 * never promoted over the restored master nor taken as a master with more data.
 */
export const endRestoring = async (
  run: Run,
  reason: 'Restored' | 'RestoreFailed' | 'RolledBack',
  message: string,
  history?: { id: string; offset: number; previous: string[] },
) => {
  run.ctx.fence();
  await writeClusterStatus(run.ctx.kube, run.rc, (s) => {
    const marked = findCondition(s.conditions as Condition[] | undefined, RESTORING);
    // Only a condition that names this Restore is this run's to end (or none at all, with history to write).
    if (!history && marked?.message?.startsWith(restoringMessageFor(run.loaded.key.name)) !== true)
      return undefined;
    const next = set(s, run, 'False', reason, `${restoringMessageFor(run.loaded.key.name)}${message}`);
    if (!history) return next;
    // The data it replaced: instances that still hold it are resynchronized, never promoted.
    const replaced = [...historyIds(s.replication), ...(s.replication?.superseded ?? [])].filter(
      (id): id is string => !!id && id !== history.id && !history.previous.includes(id),
    );
    const superseded = [...new Set(replaced)].slice(0, 8);
    return { ...next, replication: { ...history, ...(superseded.length ? { superseded } : {}) } };
  });
};
