import type { CloudEvent } from 'cloudevents';
import { BackupSpecDefaults } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { ConfigurationError } from '../../shared/backup/errors.ts';
import {
  BACKUP_FINALIZER,
  type BackupStatus,
  hasBackupFinalizer,
  isBackupOutcome,
  type LoadedBackup,
  loadBackup,
  setBackupFinalizers,
} from '../../shared/backup/kube.ts';
import type { SourcePreference } from '../../shared/backup/sources.ts';
import { type ResolvedStore, resolveStore } from '../../shared/backup/store-config.ts';
import { extension } from '../../shared/events/extension.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import {
  done,
  type FailureStatus,
  type HandlerContext,
  LockLostError,
  type Outcome,
  retryAfter,
  TemporaryError,
} from '../../shared/runtime/handler.ts';
import { onBehalf } from '../../shared/runtime/on-behalf.ts';
import { failureOf } from './failure.ts';
import { finalizeBackup } from './finalize.ts';
import { releaseAfterRestore } from './released.ts';
import {
  announce,
  CONDITION,
  completedStatus,
  type Failure,
  formatDuration,
  percentOf,
  recordEvents,
  recordMetrics,
  withCondition,
} from './report.ts';
import { BackupDeletedError, ClusterBusyError, keysOf, storeSpecOf, type Taken, takeBackup } from './run.ts';
import { loadTarget } from './targets/index.ts';
import type { BackupTarget } from './targets/types.ts';

/** How long a Backup waits, before its first attempt, for its cluster to have an instance to take a snapshot from. */
const SOURCE_WAIT_MS = 10 * 60_000;

const attemptsLimit = (env: HandlerContext['env']) => Math.max(1, Number(env.TIDEWAY_BACKUP_ATTEMPTS) || 5);

/**
 * A Backup that failed for good: phase Failed, the reason and what to do, Events, the
 * `dev.tideway.backup.failed` CloudEvent. When an upload could not be aborted (the store was
 * unreachable), the Backup keeps `pendingAbort` and the run is retried until the abort goes
 * through: no parts are left behind for good.
 */
const failBackup = async (
  loaded: LoadedBackup,
  ctx: HandlerContext,
  event: CloudEvent<unknown>,
  f: Failure,
  cluster: BackupTarget['object'] | undefined,
  unfinished?: { resolved: ResolvedStore; key: string },
): Promise<Outcome> => {
  let pendingAbort: string | undefined;
  if (unfinished)
    await unfinished.resolved.store.abortUnfinished(unfinished.key).catch((error: { retry?: unknown }) => {
      // A store that refuses for good (bucket gone, credentials revoked) will never take it.
      if (error?.retry !== false) pendingAbort = unfinished.key;
    });
  const now = ctx.clock();
  const message = f.message.slice(0, 4000);
  ctx.fence();
  const written = await loaded.writeStatus((s) => {
    const { pendingAbort: _p, ...rest } = s;
    return withCondition(
      {
        ...rest,
        phase: 'Failed',
        error: { reason: f.reason, message },
        ...(pendingAbort ? { pendingAbort } : {}),
        observedGeneration: loaded.backup.metadata.generation,
      },
      'False',
      { reason: f.reason, message },
      loaded.backup.metadata.generation,
      now,
    );
  });
  ctx.log.warn('backup failed', { reason: f.reason, message });
  await recordEvents(ctx, loaded, cluster, {
    type: 'Warning',
    reason: 'Failed',
    note: `${f.reason}: ${message}`,
  });
  await announce(ctx, loaded, event.source, written?.status);
  recordMetrics(ctx, loaded, undefined, 0);
  return pendingAbort ? retryAfter(10_000, 'AbortPending') : done;
};

/** A failed Backup whose upload could not be aborted: try again, until the store answers. */
const abortPending = async (loaded: LoadedBackup, ctx: HandlerContext): Promise<Outcome> => {
  const spec = loaded.backup.status?.store;
  // What this Backup uploads to, not what its status says: the status marks that an abort is
  // owed, the key is always this Backup's own.
  const key = spec && loaded.backup.status?.pendingAbort ? keysOf(loaded, spec).object : undefined;
  try {
    if (spec && key) {
      const { store } = await resolveStore({
        kube: ctx.kube,
        namespace: loaded.key.namespace,
        spec,
        withoutKey: true,
      });
      await store.abortUnfinished(key);
    }
  } catch (error) {
    if ((error as { retry?: unknown }).retry !== false)
      return retryAfter(10_000, `AbortPending: ${(error as Error).message}`);
    ctx.log.warn('the unfinished upload cannot be aborted', { key, error });
  }
  ctx.fence();
  await loaded.writeStatus((s) => {
    const { pendingAbort: _p, ...rest } = s;
    return rest;
  });
  return done;
};

/** The cluster's lock is held elsewhere before this attempt could start: look again shortly. */
const clusterBusy = async (loaded: LoadedBackup, ctx: HandlerContext, error: ClusterBusyError) => {
  const generation = loaded.backup.metadata.generation;
  const ready = findCondition(loaded.backup.status?.conditions as Condition[] | undefined, CONDITION);
  if (ready?.reason !== 'ClusterBusy') {
    ctx.fence();
    await loaded.writeStatus((s) =>
      withCondition(
        { ...s, phase: s.phase ?? 'Pending' },
        'False',
        { reason: 'ClusterBusy', message: `${error.message}; starting when it is free` },
        generation,
        ctx.clock(),
      ),
    );
  }
  return retryAfter(2000, 'ClusterBusy');
};

/** A Restore's outcome: the deleted Backups it kept go now (./released.ts). */
const afterRestore = (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> =>
  onBehalf(ctx, 'deleted Backups not looked at after a Restore finished', async () => {
    const released = await releaseAfterRestore(event, ctx);
    if (released.length > 0) ctx.log.info('deleted Backups that a finished Restore kept', { released });
    return done;
  });

/**
 * The runtime's failure report on a Backup (RetriesExhausted, a terminal error such as a refused
 * API call) ends an unfinished one `Failed` with that error: nothing would run it again (its
 * status changes are no events), and a Backup left `Pending` or `Running` for good holds back its
 * schedule (Forbid), the CLI's `backup now` and a Restore's safety wait. Its unfinished upload, if
 * any, is aborted by the finalizer when the Backup is deleted. A finished Backup keeps its phase:
 * a later event's failure says nothing of its data.
 */
export const failureStatus: FailureStatus = (report, status) =>
  report.kind !== 'Backup' || status.phase === 'Completed' || status.phase === 'Failed'
    ? status
    : {
        ...status,
        phase: 'Failed',
        error: { reason: report.reason, message: report.message.slice(0, 4000) },
      };

/**
 * backup: takes a snapshot of a RedisCluster (an RDB over the replication protocol, from an
 * in-sync replica unless `source: master`) or of an EtcdCluster (etcd's own snapshot, from a
 * follower of the current leader unless `source: master`) and streams it, compressed, optionally encrypted and
 * checksummed, into the store; progress in status while it runs, then where it is and what it
 * holds. Bad input fails at once with a reason that names the fix; transient failures are retried
 * up to TIDEWAY_BACKUP_ATTEMPTS attempts, each aborting its upload.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  if (extension(event, 'kind') === 'Restore') return afterRestore(event, ctx);
  const loaded = await loadBackup(event, ctx);
  if (isBackupOutcome(loaded)) return loaded;
  const { backup, key, writeStatus } = loaded;
  if (backup.metadata.deletionTimestamp) return finalizeBackup(loaded, ctx);
  if (!hasBackupFinalizer(backup)) {
    // First the finalizer, so nothing can be stored that deleting the Backup would not remove.
    ctx.fence();
    await setBackupFinalizers(ctx.kube, backup, [...(backup.metadata.finalizers ?? []), BACKUP_FINALIZER]);
    return done; // the update is an event of its own
  }
  const status = backup.status ?? {};
  if (status.phase === 'Completed' || status.phase === 'Failed') {
    await announce(ctx, loaded, event.source, status);
    return status.pendingAbort ? abortPending(loaded, ctx) : done;
  }
  const generation = backup.metadata.generation;
  const ref = clusterRefOf(backup.spec);

  // What only the user can fix fails at once.
  const target = await loadTarget(ctx.kube, key.namespace, ref);
  if (!target)
    return failBackup(
      loaded,
      ctx,
      event,
      {
        reason: 'ClusterNotFound',
        message: `${ref.kind} ${ref.name} does not exist in namespace ${key.namespace}: create it, or name an existing cluster in spec.cluster (name, and kind: EtcdCluster for an etcd cluster)`,
      },
      undefined,
    );
  const rc = target.object;
  let spec: ReturnType<typeof storeSpecOf>;
  let resolved: ResolvedStore;
  try {
    spec = storeSpecOf(loaded, target);
    resolved = await resolveStore({
      kube: ctx.kube,
      namespace: key.namespace,
      spec,
      onAbortFailed: (object, error) => ctx.log.warn('an upload could not be aborted', { object, error }),
    });
  } catch (error) {
    if (error instanceof ConfigurationError) return failBackup(loaded, ctx, event, error, rc);
    throw error;
  }

  // Attempts used up (the last ones stopped or crashed): the end, with or without a source now.
  const max = attemptsLimit(ctx.env);
  const attempt = (status.attempts ?? 0) + 1;
  if (attempt > max)
    return failBackup(
      loaded,
      ctx,
      event,
      {
        reason: 'RetriesExhausted',
        message: `gave up after ${max} attempts that did not finish (the function was stopped or crashed): ${status.error?.message ?? 'no error recorded'}`,
      },
      rc,
      { resolved, key: keysOf(loaded, spec).object },
    );

  // A source to take the snapshot from; waiting for one (a cluster still starting) is no attempt.
  const preference = (backup.spec.source ?? BackupSpecDefaults.source) as SourcePreference;
  const sources = await target.sources(preference);
  const now = ctx.clock();
  if (sources.list.length === 0) {
    const message = `${ref.kind} ${ref.name} has no instance to take a snapshot from: ${sources.none}`;
    const created = new Date(backup.metadata.creationTimestamp ?? now).getTime();
    // Before any attempt, 10 minutes from the Backup's making. After one (its source lost in a
    // failover, say), the Backup's age says nothing of how long it has waited: it waits for as
    // long as this delivery's retries last, ending before the runtime would give up on them.
    const waitedOut =
      (status.attempts ?? 0) === 0
        ? now.getTime() - created > SOURCE_WAIT_MS
        : ctx.attempt >= ctx.maxAttempts - 1;
    if (waitedOut) return failBackup(loaded, ctx, event, { reason: 'NoSource', message }, rc);
    ctx.fence();
    await writeStatus((s) =>
      withCondition(
        { ...s, phase: 'Pending' },
        'False',
        { reason: 'WaitingForSource', message },
        generation,
        now,
      ),
    );
    return retryAfter(5000, 'WaitingForSource');
  }

  const started = status.startedAt ? new Date(status.startedAt) : now;
  let counted = false;
  // Deleted while it streams (Replace, a person): the attempt stops and its upload is aborted,
  // rather than finishing an object the finalizer would delete. Seen at each progress write.
  const deleted = new AbortController();
  let completed: { t: Taken; took: number; status: BackupStatus | undefined };
  try {
    const t = await takeBackup({
      signal: deleted.signal,
      ctx,
      loaded,
      target,
      spec,
      resolved,
      started,
      // The store is recorded before anything is stored, for the finalizer to find it.
      onStart: async () => {
        ctx.fence();
        await writeStatus((s) =>
          withCondition(
            {
              ...s,
              phase: 'Running',
              startedAt: rfc3339(started),
              attempts: attempt,
              progress: { bytes: 0 },
              store: spec,
            },
            'False',
            { reason: 'Running', message: `attempt ${attempt} of ${max}` },
            generation,
            ctx.clock(),
          ),
        );
        counted = true;
      },
      onSource: (source) =>
        writeStatus((s) => ({ ...s, source: source.pod, progress: { bytes: 0 } })).then(() => undefined),
      onProgress: async (bytes, total) => {
        ctx.fence();
        const percent = percentOf(bytes, total);
        await writeStatus((s, current) => {
          if (current.metadata.deletionTimestamp) {
            deleted.abort(new BackupDeletedError());
            return undefined;
          }
          return s.phase === 'Running'
            ? { ...s, progress: { bytes, ...(percent !== undefined ? { percent } : {}) } }
            : undefined;
        }).then(() => undefined);
      },
      onSourceLost: (source, error) =>
        recordEvents(ctx, loaded, undefined, {
          type: 'Warning',
          reason: 'SourceLost',
          note: `${source.pod}: ${error.message}; trying another instance`,
        }),
    });
    const end = ctx.clock();
    ctx.fence();
    // Deleted as the upload finished (after its last look at the signal): not Completed, and
    // not announced; the finalizer removes what was stored.
    let deletedMeanwhile = deleted.signal.aborted;
    const written = deletedMeanwhile
      ? undefined
      : await writeStatus((s, current) => {
          if (current.metadata.deletionTimestamp) {
            deletedMeanwhile = true;
            return undefined;
          }
          return completedStatus(s, t, { started, now: end, generation, store: spec });
        });
    if (deletedMeanwhile) {
      ctx.log.info('deleted as it finished: not recorded as Completed', { backup: key.name });
      return retryAfter(100, 'BeingDeleted');
    }
    completed = { t, took: end.getTime() - started.getTime(), status: written?.status };
  } catch (error) {
    if (error instanceof LockLostError || ctx.signal.aborted) throw error;
    // The Completed write went through though its answer did not come: the backup is stored and
    // said so; a failed attempt must not be written over it. The next delivery announces it.
    let already = false;
    await writeStatus((s) => {
      already = s.phase === 'Completed';
      return undefined;
    });
    if (already) throw error;
    // The upload was aborted with the stream; the next delivery finds the deletion and finalizes.
    if (deleted.signal.aborted) {
      ctx.log.info('deleted while it ran: stopped, upload aborted', { backup: key.name });
      return retryAfter(100, 'BeingDeleted');
    }
    // Not an attempt: nothing was tried. Said once, then waited for without a concurrency slot.
    if (error instanceof ClusterBusyError && !counted) return clusterBusy(loaded, ctx, error);
    const f = failureOf(error);
    // Whatever an attempt of this Backup left in the store goes (a crash, an abort that failed).
    const unfinished = { resolved, key: keysOf(loaded, spec).object };
    if (!f.retry || attempt >= max)
      return failBackup(
        loaded,
        ctx,
        event,
        f.retry ? { reason: f.reason, message: `gave up after ${attempt} attempts: ${f.message}` } : f,
        rc,
        unfinished,
      );
    const at = ctx.clock();
    ctx.fence();
    await writeStatus((s) =>
      withCondition(
        { ...s, error: { reason: f.reason, message: f.message.slice(0, 4000) } },
        'False',
        { reason: 'Retrying', message: `attempt ${attempt} of ${max} failed: ${f.message}`.slice(0, 4000) },
        generation,
        at,
      ),
    );
    await recordEvents(ctx, loaded, undefined, {
      type: 'Warning',
      reason: 'AttemptFailed',
      note: `attempt ${attempt} of ${max}: ${f.reason}: ${f.message}`,
    });
    throw new TemporaryError(f.reason, f.message);
  }
  // Stored and recorded Completed: what follows is told, never part of the attempt. A failure
  // here (the bus, the Events API) is retried as such, and the next delivery, finding the Backup
  // Completed, announces it again; it never turns a stored backup into a failed attempt.
  const { t, took } = completed;
  ctx.log.info('backup completed', {
    location: t.location,
    size: t.size,
    rdbSize: t.rdbSize,
    source: t.source.pod,
  });
  await recordEvents(ctx, loaded, rc, {
    type: 'Normal',
    reason: 'Completed',
    note: `${t.size} bytes at ${t.location} in ${formatDuration(took)} (from ${t.source.pod})`,
  });
  await announce(ctx, loaded, event.source, completed.status);
  recordMetrics(ctx, loaded, t, took);
  return done;
};
