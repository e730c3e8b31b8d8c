import type { CloudEvent } from 'cloudevents';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { type Condition, type ConditionInput, setCondition } from '../../shared/kube/conditions.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import { FINISHED, RESTORE_CONDITION } from '../../shared/restore/ended.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import type { LoadedRestore, RestoreStatus } from './kube.ts';

/** Everything one run of the handler works with. */
export type Run = {
  readonly ctx: HandlerContext;
  readonly event: CloudEvent<unknown>;
  readonly loaded: LoadedRestore;
  readonly rc: RedisCluster;
  /** The address the feed listens on, reachable by the cluster's pods. */
  readonly feedHost: string;
  /** Loads (and rollbacks) to try before giving up. */
  readonly maxLoads: number;
  /** How often an unfinished safety backup is looked at when its outcome did not come. */
  readonly safetyRecheckMs: number;
};

export { FINISHED };
/** How a Restore goes and how it ended (also the runtime's failureCondition). */
export const CONDITION = RESTORE_CONDITION;
/** Which data the cluster holds once the Restore ended: True only for the restored data. */
export const DATA_CONDITION = 'ClusterData';

/** `12.3s`: how long, for people. */
export const formatDuration = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Percent of a known total, never 100 before the end. */
export const percentOf = (bytes: number, total: number | undefined) =>
  total ? Math.min(99, Math.floor((bytes * 100) / total)) : undefined;

export const withConditions = (
  s: RestoreStatus,
  inputs: readonly ConditionInput[],
  generation: number | undefined,
  now: Date,
): RestoreStatus => ({
  ...s,
  conditions: inputs.reduce<Condition[]>(
    (list, c) => setCondition(list, c, generation, now),
    (s.conditions ?? []) as Condition[],
  ),
});

/** Sets the phase and the Completed condition (False while it runs: the reason says where it is). */
export const enterPhase = (
  run: Run,
  phase: NonNullable<RestoreStatus['phase']>,
  message: string,
  extra: Partial<RestoreStatus> = {},
) => {
  const { restore } = run.loaded;
  const now = run.ctx.clock();
  run.ctx.fence();
  return run.loaded.writeStatus((s) =>
    withConditions(
      {
        ...s,
        ...extra,
        phase,
        observedGeneration: restore.metadata.generation,
        startedAt: s.startedAt ?? rfc3339(now),
      },
      [{ type: CONDITION, status: 'False', reason: phase, message }],
      restore.metadata.generation,
      now,
    ),
  );
};

const PROGRESS_EVERY_MS = 1000;

/**
 * Progress in status while bytes stream (throttled to one write a second, never awaited by the
 * stream: a slow API server must not slow the data down). `flush` waits for the last write.
 */
export const progressWriter = (run: Run, total: number) => {
  let last = 0;
  let writing: Promise<void> | undefined;
  return {
    onProgress: (bytes: number) => {
      const now = performance.now();
      if (writing || now - last < PROGRESS_EVERY_MS) return;
      last = now;
      const percent = percentOf(bytes, total);
      writing = run.loaded
        .writeStatus((s) =>
          FINISHED.has(s.phase ?? '')
            ? undefined
            : { ...s, progress: { bytes, ...(percent !== undefined ? { percent } : {}) } },
        )
        .catch((error: unknown) => run.ctx.log.warn('progress not written', { error }))
        .finally(() => {
          writing = undefined;
        });
    },
    flush: async () => {
      await writing;
    },
  };
};
