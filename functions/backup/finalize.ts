import { BackupSpecDefaults } from '../../shared/api/generated.ts';
import { StoreError } from '../../shared/backup/errors.ts';
import {
  BACKUP_FINALIZER,
  DELETING_OBJECT_ANNOTATION,
  hasBackupFinalizer,
  type LoadedBackup,
  markDeletingObject,
  setBackupFinalizers,
} from '../../shared/backup/kube.ts';
import { type BackupStoreSpec, resolveStore } from '../../shared/backup/store-config.ts';
import { rfc3339 } from '../../shared/kube/time.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { usersOf } from './in-use.ts';
import { recordEvents } from './report.ts';
import { keysOf } from './run.ts';

/**
 * The store a Backup wrote to, recorded before its first upload started. Without it nothing was
 * ever stored: there is nothing to delete, and no store (or Secret) to reach for it.
 */
const storeOf = (loaded: LoadedBackup): BackupStoreSpec | undefined =>
  loaded.backup.status?.store as BackupStoreSpec | undefined;

/**
 * When a deleted Backup that a restore still uses is looked at again (ms): every
 * TIDEWAY_BACKUP_IN_USE_RECHECK_MS (30 s) for the first 20 looks, then ten times as seldom, so the
 * function's retries (200) cover about 15 hours of restore.
 */
export const inUseRecheckMs = (env: Record<string, string | undefined>, attempt: number) => {
  const every = Number(env.TIDEWAY_BACKUP_IN_USE_RECHECK_MS ?? '') || 30_000;
  return attempt <= 20 ? every : every * 10;
};

/**
 * A deleted Backup: kept while an unfinished Restore uses it; then any unfinished upload of it goes (a crashed attempt's parts are never worth
 * keeping), then with deletionPolicy Delete its object and its manifest, then the finalizer. A
 * store that cannot be reached keeps the Backup (retried); one that refuses for good (the Secret
 * or bucket gone, the credentials revoked) is reported in a Warning Event and the Backup goes: a
 * deletion must not hang forever on what cannot change.
 */
export const finalizeBackup = async (
  loaded: LoadedBackup,
  ctx: HandlerContext,
  deps: { resolveStore: typeof resolveStore } = { resolveStore },
): Promise<Outcome> => {
  const { backup } = loaded;
  if (!hasBackupFinalizer(backup)) return done;
  // A Completed Backup is kept while a restore loads from it or may roll back to it, whatever the
  // deletionPolicy (the restore finds the object through this Backup). An unfinished one holds
  // nothing to load: its restore waits for it to finish, so waiting here would wait for each other.
  const users = backup.status?.phase === 'Completed' ? await usersOf(ctx, backup, loaded.key.namespace) : [];
  if (users.length > 0) {
    const names = users.join(', ');
    if (ctx.attempt === 1)
      await recordEvents(ctx, loaded, undefined, {
        type: 'Normal',
        reason: 'InUse',
        note: `kept while ${names} need${users.length > 1 ? '' : 's'} it: a restore loads from this backup or may roll back to it, a new EtcdCluster starts from it`,
      });
    // A Restore's outcome releases it at once (./released.ts); these looks are for an outcome
    // that never came. Never for ever: a restore the runtime gave up on never reaches a finished
    // phase. Within the runtime's retries (hours), then the deletion goes on.
    if (ctx.attempt < ctx.maxAttempts - 1)
      return retryAfter(inUseRecheckMs(ctx.env, ctx.attempt), `InUse: ${names}`);
    await recordEvents(ctx, loaded, undefined, {
      type: 'Warning',
      reason: 'InUseGaveUp',
      note: `still used by ${names} after ${ctx.attempt} looks: deleted anyway, a deletion must not hang for good`,
    });
  }
  const byPolicy = (backup.spec.deletionPolicy ?? BackupSpecDefaults.deletionPolicy) === 'Delete';
  // An earlier look decided to delete the object (the annotation) and may have done so.
  const decided = backup.metadata.annotations?.[DELETING_OBJECT_ANNOTATION] !== undefined;
  let remove = byPolicy;
  let current = backup;
  const spec = storeOf(loaded);
  if (spec) {
    const keys = keysOf(loaded, spec);
    try {
      const { store } = await deps.resolveStore({
        kube: ctx.kube,
        namespace: loaded.key.namespace,
        spec,
        withoutKey: true,
      });
      ctx.fence();
      await store.abortUnfinished(keys.object);
      // Retain set since that decision: kept if the object is still there (that look did not get
      // to it: the store did not answer); if it is gone, the deletion is finished and said so.
      if (!byPolicy && decided) remove = !(await store.head(keys.object));
      if (remove) {
        if (!decided) {
          ctx.fence();
          const marked = await markDeletingObject(ctx.kube, backup, rfc3339(ctx.clock()));
          // Changed since it was read (deletionPolicy Retain, say): the next look decides.
          if (!marked) return retryAfter(1000, 'BackupChanged');
          current = marked;
        }
        await store.delete(keys.object);
        await store.delete(keys.manifest);
        await recordEvents(ctx, loaded, undefined, {
          type: 'Normal',
          reason: 'Deleted',
          note: `deleted ${store.url(keys.object)} and its manifest`,
        });
      }
    } catch (error) {
      if (error instanceof StoreError && error.retry)
        return retryAfter(5000, `ObjectNotDeleted: ${error.message}`);
      // Anything not known to be final (an API error, say) is retried.
      if ((error as { retry?: unknown }).retry !== false) throw error;
      await recordEvents(ctx, loaded, undefined, {
        type: 'Warning',
        reason: 'ObjectNotDeleted',
        note: `the stored object ${keys.object} could not be ${remove ? 'deleted' : 'cleaned up'} and stays: ${(error as Error).message}`,
      });
    }
  }
  if (!remove)
    await recordEvents(ctx, loaded, undefined, {
      type: 'Normal',
      reason: 'Retained',
      note: `deletionPolicy Retain: ${backup.status?.location ?? 'the stored object'} stays`,
    });
  ctx.fence();
  await setBackupFinalizers(
    ctx.kube,
    current,
    (current.metadata.finalizers ?? []).filter((f) => f !== BACKUP_FINALIZER),
  );
  return done;
};
