import type { KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import type { Hono } from 'hono';
import type { Bus } from '../bus/connect.ts';
import type { EventPublisher } from '../bus/types.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';

/**
 * What a handler tells the runtime (controller-runtime's Result, in our words):
 * done → ack; retry → nak with a delay; terminal → term, plus a condition and an Event.
 */
export type Outcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'retry'; readonly afterMs: number; readonly reason: string }
  | { readonly kind: 'terminal'; readonly reason: string; readonly message: string };

export const done: Outcome = { kind: 'done' };
export const retryAfter = (afterMs: number, reason = 'Requeue'): Outcome => ({
  kind: 'retry',
  afterMs,
  reason,
});
export const terminal = (reason: string, message: string): Outcome => ({ kind: 'terminal', reason, message });

/** Throw to fail for good: the input will not get better by retrying. */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  readonly retry = false;
  /** CamelCase reason for the condition and the Event. */
  readonly reason: string;

  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** Throw to retry later; `afterMs` overrides the function's back-off. */
export class TemporaryError extends Error {
  override readonly name = 'TemporaryError';
  readonly retry = true;
  readonly reason: string;
  readonly afterMs: number | undefined;

  constructor(reason: string, message: string, afterMs?: number, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.afterMs = afterMs;
  }
}

/** Injected dependencies: every outside system behind something a test can replace. */
export type Deps = {
  readonly kube: KubeConfig;
  readonly publisher: EventPublisher;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly clock: () => Date;
  readonly env: Readonly<Record<string, string | undefined>>;
};

export type HandlerContext = Deps & {
  readonly function: string;
  /** 1 on first delivery; counts redeliveries after failures and crashes. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted on timeout, on shutdown past the drain deadline, or when the object lock is lost. */
  readonly signal: AbortSignal;
  /**
   * Throws LockLostError unless this run still holds its object's lock, judged by the clock now.
   * Call it right before every mutation (a Kubernetes write, a Redis command that changes a
   * role): a handler that stalled past its lease must not act on what it decided before.
   */
  readonly fence: () => void;
  /** The lock's fencing token: it grows with every renewal and with every new holder. */
  readonly lockToken: () => number;
  /**
   * Runs `fn` while this run also holds another object's lock (a Backup's cluster, say): taken at
   * once if free, else waited for up to `waitMs` (a wait holds this run's concurrency slot: keep
   * it short, and prefer retryAfter). Undefined, without running fn, when the lock was not had.
   * Inside fn, fence() also checks that lock, and fn's signal aborts when either is lost.
   */
  readonly withLock: <T>(
    key: string,
    o: { waitMs: number },
    fn: (signal: AbortSignal) => Promise<T>,
  ) => Promise<{ value: T } | undefined>;
};

/** The object lock ran out (a stall, a lost connection): stop; another replica redoes the work. */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  readonly retry = true;
  readonly reason = 'LockLost';
}

/** Resolving to undefined means done. */
export type Handler = (event: CloudEvent<unknown>, ctx: HandlerContext) => Promise<Outcome | undefined>;

/**
 * What a run on `event` locks, if not the event's own object: a handler module may export it as
 * `lockKey` next to its handler. The runtime then runs at most one handler per key at a time, in
 * each process (keyed scheduler) and across replicas (object lock), and fence()/lockToken() are
 * that lock's. E.g. a Restore's handler locks its RedisCluster, to serialize with reconcile and
 * health: `objectKeyOf({ kind: 'RedisCluster', namespace, name: cluster })` (events/subjects.ts).
 * A run that needs another object's lock for part of its work only uses ctx.withLock instead.
 * Pure and fast: it runs for every delivery, before the handler. Throwing fails the delivery
 * for good (reason InvalidLockKey), as an event it cannot place would never get better.
 */
export type LockKey = (event: CloudEvent<unknown>) => string;

/**
 * What else the runtime's failure report writes into an object's status, beside its failure
 * condition: a handler module's `failureStatus` export, for objects whose phase must say they
 * ended (a Backup given up on is Failed, never Running for good). Given the report (the kind
 * among it: a function handles other kinds' events too) and the status with the condition set;
 * returns the status to write.
 */
export type FailureStatus = (
  report: { kind: string; reason: string; message: string },
  status: Record<string, unknown>,
) => Record<string, unknown>;

/** A long-running function (the watcher): started once per replica, stopped on SIGTERM. */
/**
 * A long-running function. It gets no KubeConfig: loading @kubernetes/client-node costs ~90 MiB
 * per process, and a service that needs the API brings its own client (the watcher's is small).
 */
export type Service = (
  ctx: Omit<Deps, 'kube'> & { readonly function: string; readonly bus: Bus },
) => Promise<{
  stop(): Promise<void>;
  /** More endpoints for the process's ops server (the watcher's /lag, which KEDA reads). */
  routes?: Hono;
}>;

/** Maps whatever a handler returned or threw to an outcome. Unknown errors are retried. */
export const toOutcome = (result: Outcome | undefined | { error: unknown }): Outcome => {
  if (result === undefined) return done;
  if ('error' in result) {
    const e = result.error as { retry?: unknown; reason?: unknown; afterMs?: unknown; message?: unknown };
    const reason = typeof e?.reason === 'string' ? e.reason : 'Error';
    const message = typeof e?.message === 'string' ? e.message : String(result.error);
    if (e?.retry === false) return terminal(reason, message);
    return {
      kind: 'retry',
      afterMs: typeof e?.afterMs === 'number' ? e.afterMs : -1,
      reason: `${reason}: ${message}`,
    };
  }
  return result;
};
