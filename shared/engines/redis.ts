import { TIDEWAY_KINDS } from '../kube/resources.ts';
import type { Engine } from './types.ts';

/** Redis: RedisCluster, one master and its replicas in a StatefulSet (shared/rediscluster). */
export const redisEngine: Engine = {
  label: 'redis',
  cluster: TIDEWAY_KINDS.RedisCluster,
  owned: [
    { kind: 'Pod', group: '', version: 'v1', plural: 'pods' },
    { kind: 'StatefulSet', group: 'apps', version: 'v1', plural: 'statefulsets' },
    { kind: 'Service', group: '', version: 'v1', plural: 'services' },
    { kind: 'ConfigMap', group: '', version: 'v1', plural: 'configmaps' },
    { kind: 'PodDisruptionBudget', group: 'policy', version: 'v1', plural: 'poddisruptionbudgets' },
  ],
  healthTicks: true,
  functions: ['reconcile', 'health'],
};
