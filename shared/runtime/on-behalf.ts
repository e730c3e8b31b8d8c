import { done, type HandlerContext, LockLostError, type Outcome, toOutcome } from './handler.ts';

/** Attempts at a failed run on behalf of another object before it is left to that object's own. */
const ON_BEHALF_ATTEMPTS = 3;

/**
 * A run caused by one object's event that acts for another (a Backup's outcome moving its Restore
 * on; a Restore's outcome letting go of Backups; a Backup's change updating its schedule). It only
 * hurries what the other object's own deliveries do anyway, so nothing it meets is reported: the
 * runtime would write a failure on the event's object, which is not the one that failed. A failure
 * that may pass is retried a few times, then logged; none ends terminal; a retry the run asks for
 * stops short of the runtime's limit (whose end is reported too).
 */
export const onBehalf = async (
  ctx: Pick<HandlerContext, 'attempt' | 'maxAttempts' | 'log'>,
  what: string,
  run: () => Promise<Outcome>,
): Promise<Outcome> => {
  let outcome: Outcome;
  try {
    outcome = await run();
  } catch (error) {
    // A lost lock is another replica's turn, not a failure; a timeout counts like any failure.
    outcome = toOutcome({ error });
    if (
      !(error instanceof LockLostError) &&
      (outcome.kind !== 'retry' || ctx.attempt >= ON_BEHALF_ATTEMPTS)
    ) {
      ctx.log.warn(`${what}: left to its own deliveries`, { error, attempt: ctx.attempt });
      return done;
    }
  }
  return outcome.kind === 'retry' && ctx.attempt < ctx.maxAttempts - 1 ? outcome : done;
};
