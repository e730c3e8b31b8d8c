import type { CloudEvent } from 'cloudevents';
import { hasBackupFinalizer, isBackupOutcome, loadBackupAt } from '../../shared/backup/kube.ts';
import { extension } from '../../shared/events/extension.ts';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { EventType } from '../../shared/events/types.ts';
import { isFinished } from '../../shared/restore/ended.ts';
import { backupsUsedBy, restoresUsing } from '../../shared/restore/uses.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { finalizeBackup } from './finalize.ts';
import { listRestores } from './in-use.ts';

const OUTCOMES = new Set<string>([EventType.restoreCompleted, EventType.restoreFailed]);

/**
 * A Restore finished (`dev.tideway.restore.completed|failed`): the deleted Backups it kept —
 * the one it loaded, its safety backup — are finalized now if no unfinished Restore uses them
 * any more, not at their next look (finalize.ts, TIDEWAY_BACKUP_IN_USE_RECHECK_MS). Each under
 * its own lock, as its own runs are; one whose lock is held (its own look, a schedule's run) is
 * left to its next look. Returns the Backups it finalized.
 */
export const releaseAfterRestore = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<string[]> => {
  const [namespace, name] = [extension(event, 'namespace'), extension(event, 'name')];
  if (!OUTCOMES.has(event.type) || extension(event, 'kind') !== 'Restore' || !namespace || !name) return [];
  const restores = await listRestores(ctx, namespace);
  const finished = restores.find((r) => r.metadata.name === name && isFinished(r));
  // Deleted since (its Backups wait for their next look), or not finished: nothing let go.
  if (!finished) return [];
  const released: string[] = [];
  for (const backup of new Set(backupsUsedBy(finished).map((u) => u.name))) {
    const key = objectKeyOf({ kind: 'Backup', namespace, name: backup });
    const ran = await ctx.withLock(key, { waitMs: 0 }, async () => {
      const loaded = await loadBackupAt({ namespace, name: backup }, ctx);
      if (isBackupOutcome(loaded)) return false;
      const b = loaded.backup;
      const waits = b.metadata.deletionTimestamp && hasBackupFinalizer(b) && b.status?.phase === 'Completed';
      if (!waits || restoresUsing(restores, b).length > 0) return false;
      // Not done (a Restore made meanwhile uses it, the store did not answer): its own looks go on.
      return (await finalizeBackup(loaded, ctx)).kind === 'done';
    });
    if (ran?.value) released.push(backup);
  }
  return released;
};
