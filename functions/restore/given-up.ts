import type { Condition } from '../../shared/kube/conditions.ts';
import { markedRestore } from '../../shared/rediscluster/restoring.ts';
import { type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { failRestore } from './finish.ts';
import { lookAgain, SETTLE, settleLoad, VERDICT_WORDS } from './gone.ts';
import type { Run } from './run.ts';

/**
 * A Restore the runtime gave up on (`givenUp`), at its next run: ended, never taken up again — a
 * run hours later must not load over what the cluster has had since. Given up while loading, the
 * load it left is first settled as a deleted Restore's is (the master made a master again if it
 * still follows the feed, which is gone), only while the cluster's Restoring mark names it (else
 * the load is not its to touch); while the target still loads or does not answer, it looks again
 * (`lookAgain`) and stays active (`isActive`). Then said: the master's own data when the load never reached
 * it, else Unknown with what the master holds.
 */
export const endGivenUp = async (run: Run, given: Condition): Promise<Outcome> => {
  const phase = run.loaded.restore.status?.phase ?? 'Pending';
  const load = phase === 'Restoring' ? run.loaded.state.load : undefined;
  const marked = markedRestore(run.rc) === run.loaded.key.name;
  const verdict = load && marked ? await settleLoad(run.ctx, run.rc, load) : undefined;
  // Looked at for at most SETTLE's 10 minutes from the give-up, however many runs (health's looks
  // among them) came meanwhile.
  const since = Date.parse(given.lastTransitionTime ?? '');
  const settling =
    !Number.isFinite(since) || run.ctx.clock().getTime() - since < SETTLE.recheckMs * SETTLE.looks;
  if (verdict && settling && lookAgain(verdict, run.ctx))
    return retryAfter(SETTLE.recheckMs, `SettlingLoad: ${VERDICT_WORDS[verdict]}`);
  const untouched = phase !== 'Restoring' || (load?.of === 'restore' && verdict === 'untouched');
  const words = verdict
    ? VERDICT_WORDS[verdict]
    : load
      ? 'its load was left as it was (the cluster’s Restoring condition does not name this Restore)'
      : 'no load was recorded';
  if (phase !== 'Restoring') await recordGivenUp(run);
  return failRestore(run, {
    reason: given.reason,
    message: `${given.message}; ${
      untouched
        ? 'nothing was restored: create the Restore again'
        : `the restore function stopped during a load: ${words}; check the data, or restore again`
    }`,
    data: untouched ? 'untouched' : 'interrupted',
    at: phase,
    // A run may have marked the cluster and stopped before it entered Restoring.
    marked: true,
  });
};

/**
 * Records, before a Restore given up on before Restoring is finished, that it was: it blocked no
 * Restore of its cluster since, though it finishes later (one-at-a-time.ts).
 */
export const recordGivenUp = (run: Run) =>
  run.loaded.writeState({
    ...run.loaded.state,
    givenUp: { at: run.loaded.restore.status?.phase ?? 'Pending' },
  });
