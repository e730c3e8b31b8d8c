import type { Restore } from '../api/generated.ts';
import { type Condition, findCondition } from '../kube/conditions.ts';

/** The condition that says how a Restore goes and how it ended (also the runtime's failureCondition). */
export const RESTORE_CONDITION = 'Completed';

/** The phases a Restore ends in; it never leaves them. */
export const FINISHED = new Set(['Completed', 'Failed', 'RolledBack']);

/** Whether a Restore has finished, one way or another. */
export const isFinished = (r: Pick<Restore, 'status'>) => FINISHED.has(r.status?.phase ?? '');

/**
 * The runtime's failure report on an unfinished Restore (RetriesExhausted, or a terminal error):
 * it replaced the Completed condition its phase writes (reason: the phase's name). Nothing runs
 * for such a Restore any more, and its next run, if one comes, ends it without loading (a load it
 * left in Restoring is settled first, functions/restore/given-up.ts): it is never taken up again
 * to load a backup over what the cluster has had since.
 */
export const givenUp = (r: Pick<Restore, 'status'>): Condition | undefined => {
  if (isFinished(r)) return undefined;
  const c = findCondition(r.status?.conditions as Condition[] | undefined, RESTORE_CONDITION);
  return c && c.status === 'False' && c.reason !== (r.status?.phase ?? 'Pending') ? c : undefined;
};

/**
 * Whether a Restore may still load data into its cluster, or has a load to settle: neither
 * finished nor given up — except one given up in Restoring, whose load only its own next run (or
 * its deletion) settles: until then its cluster takes no other restore, and its Backups (the way
 * back among them) stay. Only such a Restore keeps a later one of its cluster from starting, and
 * its Backups from deletion.
 */
export const isActive = (r: Pick<Restore, 'status'>) =>
  !isFinished(r) && (!givenUp(r) || r.status?.phase === 'Restoring');

/** `name (phase)`, and what a Restore given up on mid-load waits for: how refusals name it. */
export const describeRunning = (r: Pick<Restore, 'status' | 'metadata'>) =>
  `${r.metadata.name} (${r.status?.phase ?? 'Pending'}${
    givenUp(r) ? ', given up on: its next run or its deletion settles its load' : ''
  })`;
