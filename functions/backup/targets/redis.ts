import type { KubeConfig } from '@kubernetes/client-node';
import type { RedisCluster } from '../../../shared/api/generated.ts';
import { readCluster } from '../../../shared/backup/kube.ts';
import { backupSources, noSourceReason } from '../../../shared/backup/sources.ts';
import { openSnapshot, SnapshotError } from '../../../shared/redis/snapshot.ts';
import { passwordsOf } from '../../../shared/rediscluster/auth.ts';
import { listPods, readAuth } from '../../../shared/rediscluster/kube.ts';
import { REDIS_PORT } from '../../../shared/rediscluster/names.ts';
import { type Instance, probeInstances } from '../../../shared/rediscluster/probe.ts';
import type { BackupTarget, SnapshotSource } from './types.ts';

type RedisSource = SnapshotSource & { readonly instance: Instance };

/**
 * A RedisCluster's snapshots: an RDB over the replication protocol from an in-sync replica (or the
 * master), with the password each instance accepts.
 */
export const redisTarget = async (
  kube: KubeConfig,
  namespace: string,
  rc: RedisCluster,
): Promise<BackupTarget> => {
  const passwords = passwordsOf(await readAuth(kube, rc, false));
  return {
    ref: { kind: 'RedisCluster', name: rc.metadata.name },
    object: rc,
    defaultStore: rc.spec.backup?.store,
    sources: async (preference) => {
      const now = (await readCluster(kube, namespace, rc.metadata.name)) ?? rc;
      const instances = await probeInstances(now.metadata.name, await listPods(kube, now), passwords);
      const o = { source: preference, master: now.status?.master };
      const list: RedisSource[] = backupSources(instances, o).map((i) => ({
        pod: i.pod,
        product: i.product ?? 'redis',
        version: i.version ?? 'unknown',
        ...(i.memory ? { usedMemory: i.memory.used, maxmemoryUsage: i.memory.counted } : {}),
        ...(i.maxmemory ? { maxmemory: i.maxmemory.bytes } : {}),
        instance: i,
      }));
      return { list, none: noSourceReason(instances, o) };
    },
    open: async (source, signal) => {
      const { instance } = source as RedisSource;
      const snap = await openSnapshot({
        host: instance.ip ?? '',
        port: REDIS_PORT,
        password: passwords[instance.password ?? 0] ?? '',
        signal,
      });
      return { data: snap.rdb, total: snap.header.size };
    },
    sourceLost: (error) => (error instanceof SnapshotError ? error : undefined),
  };
};
