import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterRef } from '../../../shared/backup/cluster-ref.ts';
import { readCluster } from '../../../shared/backup/kube.ts';
import { etcdTarget, readEtcdCluster } from './etcd.ts';
import { redisTarget } from './redis.ts';
import type { BackupTarget } from './types.ts';

/** The cluster a Backup names, as something to back up; undefined when it does not exist. */
export const loadTarget = async (
  kube: KubeConfig,
  namespace: string,
  ref: ClusterRef,
): Promise<BackupTarget | undefined> => {
  if (ref.kind === 'EtcdCluster') {
    const ec = await readEtcdCluster(kube, namespace, ref.name);
    return ec && etcdTarget(kube, namespace, ec);
  }
  const rc = await readCluster(kube, namespace, ref.name);
  return rc && redisTarget(kube, namespace, rc);
};
