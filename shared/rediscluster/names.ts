import { type RedisCluster, RedisClusterSpecDefaults } from '../api/generated.ts';
import { redisEngine } from '../engines/redis.ts';
import { ENGINE_LABEL, MANAGED_BY_TIDEWAY } from '../engines/types.ts';

/** Labels every object Tideway makes for a cluster carries; the pod selector is a subset. */
export const LABEL = {
  ...ENGINE_LABEL,
  component: 'app.kubernetes.io/component',
  role: 'tideway.dev/role',
} as const;

export const FIELD_MANAGER = 'tideway';
// One finalizer for every engine's clusters.
export { FINALIZER } from '../engines/finalizer.ts';
export const REDIS_PORT = 6379;
/** The pod's container that runs the server. */
export const REDIS_CONTAINER = 'redis';

export type Role = 'master' | 'replica';

/** The names of what a cluster owns, in one place so reconcile, health and tests agree. */
export const namesOf = (rc: Pick<RedisCluster, 'metadata' | 'spec'>) => {
  const name = rc.metadata.name ?? '';
  return {
    name,
    namespace: rc.metadata.namespace ?? 'default',
    statefulSet: name,
    configMap: `${name}-config`,
    /** The Secret with key `password`: the user's, or generated. */
    authSecret: rc.spec.auth?.secretName || `${name}-auth`,
    generatedAuthSecret: !rc.spec.auth?.secretName,
    /** requirepass/masterauth as a config file the pods include (never in a ConfigMap or argv). */
    authConfSecret: `${name}-auth-conf`,
    masterService: name,
    replicaService: `${name}-replicas`,
    headlessService: `${name}-headless`,
    pdb: name,
    pod: (ordinal: number) => `${name}-${ordinal}`,
  };
};

export const selectorLabels = (name: string) => ({
  [LABEL.name]: redisEngine.label,
  [LABEL.instance]: name,
  [LABEL.managedBy]: MANAGED_BY_TIDEWAY,
});

/** `redis:<version>` unless the user named an image. */
export const imageOf = (rc: Pick<RedisCluster, 'spec'>) =>
  rc.spec.image || `redis:${rc.spec.version ?? RedisClusterSpecDefaults.version}`;

/** Ordinal of a StatefulSet pod name, or -1. */
export const ordinalOf = (clusterName: string, pod: string) => {
  const m = new RegExp(`^${clusterName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)$`).exec(pod);
  return m ? Number(m[1]) : -1;
};
