import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  type Backup,
  type EtcdCluster,
  type RedisCluster,
  type Restore,
  zEtcdCluster,
  zRedisCluster,
  zRestore,
} from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bootstrapPending } from '../../shared/rediscluster/bootstrap.ts';
import { restoresUsing } from '../../shared/restore/uses.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

const listOf = async <T>(
  ctx: HandlerContext,
  kind: 'Restore' | 'EtcdCluster' | 'RedisCluster',
  namespace: string,
  parse: (item: unknown) => T | undefined,
): Promise<T[]> => {
  const list = (await ctx.kube
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ ...TIDEWAY_KINDS[kind], namespace })) as { items?: unknown[] };
  return (list.items ?? []).flatMap((item) => {
    const parsed = parse(item);
    return parsed === undefined ? [] : [parsed];
  });
};

export const listRestores = (ctx: HandlerContext, namespace: string): Promise<Restore[]> =>
  listOf(ctx, 'Restore', namespace, (item) => zRestore.safeParse(item).data);

/**
 * The EtcdClusters that still start from `backup` (`spec.bootstrap.fromBackup`): not yet formed
 * (no cluster id, no bootstrap completed: until then a first member made again — its volume
 * lost — fetches the object again), not being deleted, and started from this very Backup when
 * one was pinned (`status.bootstrap.backupUid`). Their first member's init container downloads
 * the object: deleting it under them would leave a cluster that never forms.
 */
export const clustersStartingFrom = (
  clusters: readonly EtcdCluster[],
  backup: Pick<Backup, 'metadata'>,
): string[] =>
  clusters
    .filter((c) => c.spec.bootstrap?.fromBackup?.name === backup.metadata.name)
    .filter((c) => !c.metadata.deletionTimestamp)
    .filter((c) => !c.status?.clusterID && !c.status?.bootstrap?.completedAt)
    .filter((c) => {
      const pinned = c.status?.bootstrap?.backupUid;
      return !pinned || !backup.metadata.uid || pinned === backup.metadata.uid;
    })
    .map((c) => c.metadata.name);

/**
 * The RedisClusters that still start from `backup` (`spec.bootstrap.fromBackup`) and have not
 * loaded it yet (bootstrapPending), not being deleted. Their load's Restore is made only once the
 * new master serves: until then no Restore names the Backup, and nothing else would keep it.
 */
export const redisClustersStartingFrom = (
  clusters: readonly RedisCluster[],
  backup: Pick<Backup, 'metadata'>,
): string[] =>
  clusters
    .filter((c) => c.spec.bootstrap?.fromBackup?.name === backup.metadata.name)
    .filter((c) => !c.metadata.deletionTimestamp && bootstrapPending(c) !== undefined)
    .map((c) => c.metadata.name);

/**
 * What still needs a Completed Backup's stored object, in words (`Restore r1`, `EtcdCluster e1`):
 * the Restores that load it or may roll back to it, the clusters that start from it. In the
 * Backup's namespace only (a Restore by a raw S3 key elsewhere is not seen).
 */
export const usersOf = async (ctx: HandlerContext, backup: Backup, namespace: string): Promise<string[]> => [
  ...restoresUsing(await listRestores(ctx, namespace), backup).map((n) => `Restore ${n}`),
  // Each kind starts only from backups of its own kind.
  ...(clusterRefOf(backup.spec).kind === 'EtcdCluster'
    ? clustersStartingFrom(
        await listOf(ctx, 'EtcdCluster', namespace, (item) => zEtcdCluster.safeParse(item).data),
        backup,
      ).map((n) => `EtcdCluster ${n}`)
    : redisClustersStartingFrom(
        await listOf(ctx, 'RedisCluster', namespace, (item) => zRedisCluster.safeParse(item).data),
        backup,
      ).map((n) => `RedisCluster ${n}`)),
];
