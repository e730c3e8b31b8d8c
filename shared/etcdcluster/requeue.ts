import type { Step } from './plan.ts';

/**
 * Waits on etcd's own progress, which no Kubernetes event announces: come back soon. Every other
 * wait is on something a pod's or a volume's own event announces (a pod stopping, starting or
 * getting Ready), or that only a person changes (VolumeConflict, PodConflict, AlreadyFormed).
 */
const PROGRESS = new Set([
  'Bootstrapping',
  'LearnerCatchingUp',
  'AddDeferred',
  'RemoveDeferred',
  'NoProgress',
  'Defragmenting',
]);

/**
 * Redeliveries of one event a wait asks for at most: after them (about 4 minutes for a wait on a
 * person) the health ticks and the next change carry on, and the event is not left retrying for
 * hours until the runtime gives up on it and reports a failure that is none.
 */
export const MAX_WAIT_RETRIES = 8;

/**
 * When a run that ended on `step` asks to run again (undefined: not; the next event or tick will).
 * - converged: not.
 * - stopped at its step budget while making progress: soon (200 ms).
 * - a wait, in a run of a health tick: not — the next tick is the retry, and a tick that retried
 *   would only add a second stream of runs beside the ticks.
 * - a wait, in a run of a change: a delay that doubles with each redelivery (attempt 1, 2, …),
 *   from 1 s up to 5 s for etcd's own progress and from 5 s up to 60 s for everything else, for
 *   at most MAX_WAIT_RETRIES attempts.
 */
export const requeueAfterMs = (step: Step, attempt: number, tick = false): number | undefined => {
  if (step.kind === 'converged') return undefined;
  if (step.kind !== 'wait') return 200;
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : 1;
  if (tick || n > MAX_WAIT_RETRIES) return undefined;
  const [first, cap] = PROGRESS.has(step.reason) ? [1000, 5000] : [5000, 60_000];
  return Math.min(cap, first * 2 ** (n - 1));
};
