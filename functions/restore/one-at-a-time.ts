import type { Restore } from '../../shared/api/generated.ts';
import { isActive, isFinished } from '../../shared/restore/ended.ts';
import { statePart, zGivenUpBeforeLoad } from '../../shared/restore/uses.ts';

export const created = (r: Pick<Restore, 'metadata'>) =>
  new Date(r.metadata.creationTimestamp ?? 0).getTime();

/** Older first: by creation, then name (creation times have seconds only), the same for every run. */
const olderThan = (a: Restore, b: Restore) =>
  created(a) < created(b) || (created(a) === created(b) && a.metadata.name < b.metadata.name);

/**
 * Another Restore of the cluster was running when this one was made: created earlier, and not
 * finished then (it is not yet, or finished after this one was created). Decided by the objects'
 * times, never by when this run got the cluster lock — it waits for the other's run to end, and
 * would otherwise find it finished and load its own data over it. One the runtime gave up on
 * (`isActive`) runs no more and blocks nothing, though it is not ended until a run of its own
 * comes (there may be none): otherwise it would block its cluster's restores until deleted. Nor
 * once that run ended it, if it was given up on before it loaded (its state says so): when it
 * finished says nothing of when it stopped running.
 */
export const runningAtCreation = (other: Restore, mine: Restore) =>
  olderThan(other, mine) &&
  (isActive(other) ||
    (isFinished(other) &&
      // Only where such an end is possible (an annotation anyone may write is no proof).
      !(other.status?.phase === 'Failed' && statePart(other, 'givenUp', zGivenUpBeforeLoad)) &&
      new Date(other.status?.completedAt ?? 0).getTime() > created(mine)));
