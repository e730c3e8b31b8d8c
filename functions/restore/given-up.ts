import type { Condition } from '../../shared/kube/conditions.ts';
import type { Outcome } from '../../shared/runtime/handler.ts';
import { failRestore } from './finish.ts';
import { settleLoad, VERDICT_WORDS } from './gone.ts';
import type { Run } from './run.ts';

/**
 * A Restore the runtime gave up on (`givenUp`), at its next run: ended, never taken up again — a
 * run hours later must not load over what the cluster has had since. Given up while loading, the
 * load it left is settled as a deleted Restore's is (the master made a master again if it still
 * follows the feed, which is gone) and said: the master's own data when the load never reached
 * it, else Unknown with what the master holds.
 */
export const endGivenUp = async (run: Run, given: Condition): Promise<Outcome> => {
  const phase = run.loaded.restore.status?.phase ?? 'Pending';
  const load = phase === 'Restoring' ? run.loaded.state.load : undefined;
  const verdict = load ? await settleLoad(run.ctx, run.rc, load) : undefined;
  const untouched = phase !== 'Restoring' || (load?.of === 'restore' && verdict === 'untouched');
  return failRestore(run, {
    reason: given.reason,
    message: `${given.message}; ${
      untouched
        ? 'nothing was restored: create the Restore again'
        : `the restore function stopped during a load: ${verdict ? VERDICT_WORDS[verdict] : 'no load was recorded'}; check the data, or restore again`
    }`,
    data: untouched ? 'untouched' : 'interrupted',
    at: phase,
    // A run may have marked the cluster and stopped before it entered Restoring.
    marked: true,
  });
};
