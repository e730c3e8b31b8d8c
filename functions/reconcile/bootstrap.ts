import { CustomObjectsApi } from '@kubernetes/client-node';
import { type RedisCluster, zBackup, zRestore } from '../../shared/api/generated.ts';
import { isAlreadyExists, isNotFound } from '../../shared/kube/errors.ts';
import type { EventRecorder } from '../../shared/kube/events.ts';
import { controlledBy } from '../../shared/kube/ownership.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bootstrapRestoreName } from '../../shared/rediscluster/bootstrap.ts';
import { ownerRef } from '../../shared/rediscluster/desired.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import { selectorLabels } from '../../shared/rediscluster/names.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';

type Status = NonNullable<RedisCluster['status']>;
type Bootstrap = NonNullable<Status['bootstrap']>;

const read = async (ctx: HandlerContext, kind: 'Backup' | 'Restore', namespace: string, name: string) => {
  try {
    return await ctx.kube
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...TIDEWAY_KINDS[kind], namespace, name });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};

/**
 * spec.bootstrap.fromBackup: once the new cluster's master serves, a Restore owned by the
 * cluster loads the backup's data (the restore function does the work; no safety backup, there
 * is nothing to keep). status.bootstrap says how it goes and, once completedAt is set, the data
 * is never loaded again — not even when the Restore is deleted. Until then the cluster is not
 * Ready (observe, bootstrapPending). Returns what this run should do next.
 */
export const advanceBootstrap = async (o: {
  ctx: HandlerContext;
  rc: RedisCluster;
  masterServes: boolean;
  writeStatus: (mutate: (s: Status) => Status | undefined) => Promise<unknown>;
  recorder: EventRecorder;
  regarding: LoadedCluster['regarding'];
}): Promise<Outcome> => {
  const { ctx, rc } = o;
  const namespace = rc.metadata.namespace ?? '';
  const cluster = rc.metadata.name ?? '';
  const backupName = rc.spec.bootstrap?.fromBackup?.name ?? '';
  const restoreName = bootstrapRestoreName(cluster);
  const record = async (b: Bootstrap) => {
    const same = JSON.stringify(rc.status?.bootstrap ?? {}) === JSON.stringify(b);
    if (!same) await o.writeStatus((s) => ({ ...s, bootstrap: b }));
  };

  const backupObj = await read(ctx, 'Backup', namespace, backupName);
  const backup = backupObj ? zBackup.safeParse(backupObj) : undefined;
  if (!backup?.success) {
    await record({
      reason: 'BackupNotFound',
      message: `Backup ${backupName} (spec.bootstrap.fromBackup) does not exist in namespace ${namespace}: create it, or name an existing one`,
    });
    return retryAfter(10_000, 'BackupNotFound');
  }
  const phase = backup.data.status?.phase;
  if (phase === 'Failed') {
    await record({
      reason: 'BackupFailed',
      failed: true,
      message: `Backup ${backupName} (spec.bootstrap.fromBackup) failed (${backup.data.status?.error?.reason ?? 'no reason'}): name a Completed backup`,
    });
    return retryAfter(60_000, 'BackupFailed');
  }
  if (phase !== 'Completed') {
    await record({
      reason: 'BackupNotReady',
      message: `Backup ${backupName} is ${phase ?? 'Pending'}; the cluster is created from it once it completes`,
    });
    return retryAfter(10_000, 'BackupNotReady');
  }
  if (!o.masterServes) return retryAfter(2000, 'Bootstrapping');

  const existing = await read(ctx, 'Restore', namespace, restoreName);
  if (!existing) {
    ctx.fence();
    try {
      await ctx.kube.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        ...TIDEWAY_KINDS.Restore,
        namespace,
        body: {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'Restore',
          metadata: {
            name: restoreName,
            namespace,
            labels: { ...selectorLabels(cluster), 'tideway.dev/bootstrap': 'true' },
            ownerReferences: [ownerRef(rc)],
          },
          spec: { cluster: { name: cluster }, source: { backup: { name: backupName } }, safetyBackup: false },
        },
      });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    await record({
      restore: restoreName,
      reason: 'Restoring',
      message: `Restore ${restoreName} loads the data of Backup ${backupName}`,
    });
    return retryAfter(2000, 'Bootstrapping');
  }
  const restore = zRestore.safeParse(existing);
  if (
    !restore.success ||
    !controlledBy(existing as Parameters<typeof controlledBy>[0], rc.metadata.uid ?? '')
  ) {
    await record({
      reason: 'OwnershipConflict',
      failed: true,
      message: `Restore ${restoreName} already exists and is not this cluster's: delete or rename it`,
    });
    return done;
  }
  const r = restore.data.status;
  if (r?.phase === 'Completed') {
    await record({
      restore: restoreName,
      reason: 'Restored',
      message: `created with the data of Backup ${backupName}`,
      completedAt: r.completedAt ?? ctx.clock().toISOString(),
    });
    await o.recorder.record({
      regarding: o.regarding,
      type: 'Normal',
      reason: 'Bootstrapped',
      action: 'Restore',
      note: `created with the data of Backup ${backupName} (Restore ${restoreName})`,
    });
    return retryAfter(200, 'Bootstrapped'); // look again: Ready now
  }
  if (r?.phase === 'Failed' || r?.phase === 'RolledBack') {
    await record({
      restore: restoreName,
      reason: 'RestoreFailed',
      failed: true,
      message: `Restore ${restoreName} of Backup ${backupName} ended ${r.phase} (${r.error?.reason ?? 'no reason'}: ${r.error?.message ?? ''}); delete the Restore to try again`,
    });
    // Its deletion names no cluster to the watcher: look again now and then.
    return retryAfter(60_000, 'RestoreFailed');
  }
  await record({
    restore: restoreName,
    reason: 'Restoring',
    message: `Restore ${restoreName} of Backup ${backupName} is ${r?.phase ?? 'Pending'}`,
  });
  return retryAfter(2000, 'Bootstrapping');
};
