import { CustomObjectsApi } from '@kubernetes/client-node';
import { type Backup, type RedisCluster, zBackup } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { freshness, freshnessUnknown } from '../../shared/rediscluster/freshness.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

/**
 * The cluster's newest Completed Backup and, with spec.backup.maxBackupAge, the BackupStale
 * condition and metrics. Health runs on every tick, so staleness shows without any event. Not
 * being able to read Backups never stops health's own work: it is reported as Unknown.
 */
export const backupFreshness = async (ctx: HandlerContext, rc: RedisCluster, now: Date) => {
  const labels = { namespace: rc.metadata.namespace ?? '', cluster: rc.metadata.name ?? '' };
  let backups: Backup[];
  try {
    const list = (await ctx.kube.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      ...TIDEWAY_KINDS.Backup,
      namespace: labels.namespace,
    })) as { items?: unknown[] };
    backups = (list.items ?? []).flatMap((i) => {
      const parsed = zBackup.safeParse(i);
      return parsed.success ? [parsed.data] : [];
    });
  } catch (error) {
    ctx.log.warn('backups not readable', { error: (error as Error).message });
    const condition = freshnessUnknown(rc, (error as Error).message);
    return condition ? { condition } : {};
  }
  const f = freshness(rc, backups, now);
  if (f.ageSeconds !== undefined) ctx.metrics.set('tideway_backup_age_seconds', f.ageSeconds, labels);
  if (f.condition) ctx.metrics.set('tideway_backup_stale', f.condition.status === 'True' ? 1 : 0, labels);
  return f;
};
