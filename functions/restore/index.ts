import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { extension } from '../../shared/events/extension.ts';
import { EventType } from '../../shared/events/types.ts';
import { givenUp } from '../../shared/restore/ended.ts';
import { done, type HandlerContext, type Outcome } from '../../shared/runtime/handler.ts';
import { onBehalf } from '../../shared/runtime/on-behalf.ts';
import { failRestore } from './finish.ts';
import { endGivenUp, recordGivenUp } from './given-up.ts';
import { restoreGone } from './gone.ts';
import { isRestoreOutcome, loadRestore, readCluster } from './kube.ts';
import { safetyBackup, start, verifying } from './phases.ts';
import { restoring } from './restoring.ts';
import { FINISHED, type Run } from './run.ts';
import { type Waiting, waitingRestore, waitsFor } from './waiting.ts';

export { clusterLockKey as lockKey } from '../../shared/events/cluster-lock-key.ts';

const zEnv = z.object({
  /** Where the feed listens: an address of this process the cluster's pods reach (a pod's IP). */
  TIDEWAY_RESTORE_FEED_HOST: z
    .string()
    .optional()
    .transform((v) => v?.trim() || undefined),
  /** Loads (and rollbacks) tried before a restore gives up. */
  TIDEWAY_RESTORE_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * How often a Restore looks at its unfinished safety backup when the Backup's outcome did not
   * come (lost in a crash between its status write and its publish); the outcome comes first.
   */
  TIDEWAY_RESTORE_SAFETY_RECHECK_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
});

/**
 * restore: loads a backup into a running RedisCluster, in place, without restarting a pod. A
 * state machine over runs, each re-reading everything: Pending (one restore per cluster; the
 * source chosen once) → Verifying (the whole object read and checked before any data is
 * touched) → SafetyBackup (a Backup of the current data, by the backup function) → Restoring (the
 * master replicates the RDB from this function and is promoted back; replicas resync) →
 * Completed, or Failed / RolledBack saying which data the cluster holds. Runs lock the cluster.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  if (event.type === EventType.restoreTick) {
    // Health's look: one run, never retried on its own — the Restore's own deliveries wait and
    // retry, and the next look comes within 30 s while the mark stays. So looks never pile up
    // retries, nor run out of deliveries (whose report would land on the Restore).
    const outcome = await handleRestore(event, ctx);
    return outcome.kind === 'retry' ? done : outcome;
  }
  if (extension(event, 'kind') !== 'Backup') return handleRestore(event, ctx);
  // A safety backup's outcome: the Restore that waits for it goes on now.
  return onBehalf(ctx, 'a Restore did not go on at its safety backup’s outcome', async () => {
    const waiting = await waitingRestore(event, ctx);
    return waiting ? handleRestore(waiting.event, ctx, waiting) : done;
  });
};

/** A run of the Restore the event names; `waiting`: only if it waits for that safety backup. */
const handleRestore = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
  waiting?: Waiting,
): Promise<Outcome> => {
  const loaded = await loadRestore(event, ctx);
  if (loaded === undefined) return waiting ? done : restoreGone(event, ctx);
  if (isRestoreOutcome(loaded)) return loaded;
  const { restore, key } = loaded;
  // An event of an earlier Restore of that name (deleted, made anew): the new one's own events
  // drive it, never the earlier one's retries (their attempts are the earlier one's). The earlier
  // one's deletion still ends what it left on its cluster, unless the new one has loaded since
  // (a cluster's mark is found by the Restore's name: it would be the new one's).
  const uid = extension(event, 'uid');
  if (!waiting && uid && uid !== restore.metadata.uid)
    return event.type === EventType.deleted && !loaded.state.load ? restoreGone(event, ctx) : done;
  const phase = restore.status?.phase ?? 'Pending';
  if (FINISHED.has(phase)) return done;
  if (waiting && !waitsFor(waiting, restore)) return done;
  const env = zEnv.parse(ctx.env);
  const rc = await readCluster(ctx.kube, key.namespace, restore.spec.cluster.name);
  const run: Run = {
    ctx,
    event,
    loaded,
    // A missing cluster is reported below; the run needs one to name in Events.
    rc: rc ?? {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: restore.spec.cluster.name, namespace: key.namespace },
      spec: {},
    },
    feedHost: env.TIDEWAY_RESTORE_FEED_HOST ?? '',
    maxLoads: env.TIDEWAY_RESTORE_ATTEMPTS,
    safetyRecheckMs: env.TIDEWAY_RESTORE_SAFETY_RECHECK_MS,
  };
  if (!rc || rc.metadata.deletionTimestamp) {
    // Given up on before it loaded, it blocked nothing since (one-at-a-time.ts): said so here too.
    if (givenUp(restore) && phase !== 'Restoring') await recordGivenUp(run);
    return failRestore(run, {
      reason: rc ? 'ClusterDeleting' : 'ClusterNotFound',
      message: rc
        ? `RedisCluster ${restore.spec.cluster.name} is being deleted`
        : `RedisCluster ${restore.spec.cluster.name} does not exist in namespace ${key.namespace}: create it, or name an existing cluster in spec.cluster.name`,
      data: phase === 'Restoring' ? 'interrupted' : 'untouched',
    });
  }
  // Before anything else may end it: a load it left is settled first.
  const abandoned = givenUp(restore);
  if (abandoned) return endGivenUp(run, abandoned);
  if (!env.TIDEWAY_RESTORE_FEED_HOST)
    return failRestore(run, {
      reason: 'FeedHostNotSet',
      message:
        'the restore function has no TIDEWAY_RESTORE_FEED_HOST (the address of its pod that the cluster reaches): set it from the downward API (status.podIP) and create the Restore again',
      data: phase === 'Restoring' ? 'interrupted' : 'untouched',
    });
  switch (phase) {
    case 'Pending':
      return start(run);
    case 'Verifying':
      return verifying(run);
    case 'SafetyBackup':
      return safetyBackup(run);
    case 'Restoring':
      return restoring(run);
    default:
      return done;
  }
};
