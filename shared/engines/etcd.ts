import { TIDEWAY_KINDS } from '../kube/resources.ts';
import type { Engine } from './types.ts';

/**
 * etcd: EtcdCluster, one pod and one PVC per member, made and replaced one at a time by
 * etcd-reconcile (shared/etcdcluster): no StatefulSet, so a member is never restarted by a
 * template change and a new volume always comes with a new member.
 */
export const etcdEngine: Engine = {
  label: 'etcd',
  cluster: TIDEWAY_KINDS.EtcdCluster,
  owned: [
    { kind: 'Pod', group: '', version: 'v1', plural: 'pods' },
    { kind: 'PersistentVolumeClaim', group: '', version: 'v1', plural: 'persistentvolumeclaims' },
    { kind: 'Service', group: '', version: 'v1', plural: 'services' },
    { kind: 'PodDisruptionBudget', group: 'policy', version: 'v1', plural: 'poddisruptionbudgets' },
  ],
  healthTicks: true,
  functions: ['etcd-reconcile'],
};
