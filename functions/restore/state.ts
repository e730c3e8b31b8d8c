import { z } from 'zod';
import { STATE_ANNOTATION, zGivenUpBeforeLoad, zSourceRef } from '../../shared/restore/uses.ts';
import type { Failure } from './errors.ts';

/**
 * Where a Restore keeps what its runs must agree on (the status has no place for it, and its
 * schema prunes what it does not name): which backup `latest` resolved to — resolved once, so
 * that the safety backup, itself newer, is never taken for it — and each load of data into the
 * master: the replication id the loaded data carries, and whether the target was given the
 * whole RDB. A redelivered run decides from these which data the master holds.
 */
export { type SourceRef, STATE_ANNOTATION } from '../../shared/restore/uses.ts';

/** What the master was before a load: how to tell its own data from the loaded. */
export const zBefore = z.object({
  runId: z.string(),
  replid: z.string(),
  replid2: z.string().optional(),
  offset: z.number(),
  keys: z.number(),
  /** Its repl-diskless-load, put back after the load. */
  disklessLoad: z.string().optional(),
});
export type Before = z.infer<typeof zBefore>;

export const LOAD_KINDS = ['restore', 'rollback'] as const;
export type LoadKind = (typeof LOAD_KINDS)[number];

export const zLoad = z.object({
  /** The restore's data, or the safety backup's (rolling back). */
  of: z.enum(LOAD_KINDS),
  attempt: z.number().int().positive(),
  /** The feed's replication id: the loaded data carries it, nothing else does. */
  replid: z.string().regex(/^[0-9a-f]{40}$/),
  pod: z.string().min(1),
  feedHost: z.string().min(1),
  /**
   * Set before the last bytes of the RDB go out: until then the target cannot have started to
   * replace its data (it does so only once it has the whole file), so it holds its own.
   */
  delivered: z.boolean(),
  before: zBefore,
  /** Bytes of the RDB loaded. */
  rdbSize: z.number().int().nonnegative(),
  startedAt: z.string(),
  /**
   * A restore's load (never a rollback's) is checked against the target's maxmemory before it is
   * promoted; with the source's maxmemory, when the backup recorded it.
   */
  guard: z.object({ sourceMaxmemory: z.number().int().nonnegative().optional() }).optional(),
  /**
   * Set before the target is promoted when its loaded data set was refused (ExceedsMaxmemory): a
   * run that stops right after still rolls back, where the data alone would read as restored.
   */
  refused: z.object({ reason: z.string(), message: z.string() }).optional(),
});
export type Load = z.infer<typeof zLoad>;

/**
 * A load's own failure: a recorded refusal first — whatever else went wrong after it (a stop, the
 * record's own write failing and being retried), the loaded data must not be finished — else the
 * error this run saw.
 */
export const loadFailure = (load: Load, error: Failure | undefined): Failure | undefined =>
  load.refused ? { ...load.refused, retry: false } : error;

export const zRestoreState = z.object({
  source: zSourceRef.optional(),
  /**
   * The safety backup, by name and uid, recorded once it completed: a rollback loads that very
   * Backup, never another made under its name since (its deletion goes on after ~15 hours).
   */
  safety: z.object({ name: z.string().min(1), uid: z.string().min(1) }).optional(),
  /** Verifications started (a store that did not answer is tried again, a few times). */
  verifications: z.number().int().nonnegative().default(0),
  /** Loads started, per kind. */
  loads: z.number().int().nonnegative().default(0),
  rollbacks: z.number().int().nonnegative().default(0),
  /** The latest load; kept after it ended, as the record of what was done. */
  load: zLoad.optional(),
  /** Why the restore's own load failed, while it is rolled back (for the RolledBack status). */
  failure: z.object({ reason: z.string(), message: z.string() }).optional(),
  /** Ended after the runtime gave up on it before Restoring (`at`): it blocked nothing since. */
  givenUp: zGivenUpBeforeLoad.optional(),
});
export type RestoreState = z.infer<typeof zRestoreState>;

export const emptyState = (): RestoreState => ({ verifications: 0, loads: 0, rollbacks: 0 });

/** The state in an object's annotations; a malformed one is an error that names the annotation. */
export const stateOf = (annotations: Record<string, string> | undefined): RestoreState => {
  const raw = annotations?.[STATE_ANNOTATION];
  if (raw === undefined) return emptyState();
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  const parsed = zRestoreState.safeParse(json);
  if (!parsed.success)
    throw new StateError(
      `annotation ${STATE_ANNOTATION} is not Tideway's restore state (was it edited?): ${parsed.error.issues
        .map((i) => `${i.path.join('.') || '(value)'}: ${i.message}`)
        .join('; ')}`,
    );
  return parsed.data;
};

export class StateError extends Error {
  override readonly name = 'StateError';
  readonly reason = 'StateUnreadable';
  readonly retry = false;
}

export const serializeState = (s: RestoreState) => JSON.stringify(s);
