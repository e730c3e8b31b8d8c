import { createHash } from 'node:crypto';
import type {
  V1ConfigMap,
  V1PodDisruptionBudget,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import type { RedisCluster } from '../api/generated.ts';
import { imageOf, LABEL, namesOf, REDIS_PORT, selectorLabels } from './names.ts';
import { renderAuthConf, renderRedisConf } from './redis-conf.ts';

// Siblings, not nested: a mount point cannot be made inside a read-only volume.
const CONF_DIR = '/etc/tideway/conf';
const AUTH_DIR = '/etc/tideway/auth';
const DATA_DIR = '/data';

/** Makes the cluster the controller owner: the garbage collector removes what it owns. */
export const ownerRef = (rc: Pick<RedisCluster, 'apiVersion' | 'kind' | 'metadata'>) => ({
  apiVersion: rc.apiVersion,
  kind: rc.kind,
  name: rc.metadata.name ?? '',
  uid: rc.metadata.uid ?? '',
  controller: true,
  blockOwnerDeletion: true,
});

const meta = (rc: RedisCluster, name: string, component: string) => ({
  name,
  namespace: rc.metadata.namespace,
  labels: { ...selectorLabels(rc.metadata.name ?? ''), [LABEL.component]: component },
  ownerReferences: [ownerRef(rc)],
});

export const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

export const configMapFor = (rc: RedisCluster): V1ConfigMap => {
  const conf = renderRedisConf(rc.spec.config ?? {}, {
    authInclude: `${AUTH_DIR}/auth.conf`,
    dataDir: DATA_DIR,
    replicas: rc.spec.replicas ?? 3,
  });
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(rc, namesOf(rc).configMap, 'config'),
    data: { 'redis.conf': conf },
  };
};

/** A new random password Secret; created once, never rewritten (rotating it is the user's call). */
export const generatedAuthSecretFor = (rc: RedisCluster, password: string): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta(rc, namesOf(rc).authSecret, 'auth'),
  type: 'Opaque',
  stringData: { password },
});

export const authConfSecretFor = (rc: RedisCluster, password: string): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta(rc, namesOf(rc).authConfSecret, 'auth'),
  type: 'Opaque',
  data: { 'auth.conf': Buffer.from(renderAuthConf(password)).toString('base64') },
});

/**
 * The StatefulSet: OnDelete, so Tideway decides when a pod restarts (upgrades go replicas first,
 * then a switchover); Parallel, so a replica does not wait for the master's readiness; PVCs kept
 * on scale-down and on delete (data is never removed by accident).
 */
/**
 * How many pods the StatefulSet keeps. Scaling down never takes the master away (it stays until
 * it has handed over), and removes no instance while the master is lost: the one to promote, the
 * only one that holds the data, may be among those that would go.
 */
export const statefulSetReplicas = (o: {
  desired: number;
  /** Ordinal of status.master, -1 when there is none. */
  masterOrdinal: number;
  masterLost: boolean;
  /** The StatefulSet's replicas now, when it exists. */
  current: number | undefined;
}) => Math.max(o.desired, o.masterOrdinal + 1, o.masterLost ? (o.current ?? 0) : 0);

export const statefulSetFor = (
  rc: RedisCluster,
  configHash: string,
  /** More than spec.replicas while the master sits beyond the new size (see reconcile). */
  replicas = rc.spec.replicas ?? 3,
): V1StatefulSet => {
  const n = namesOf(rc);
  const sel = selectorLabels(n.name);
  const pt = rc.spec.podTemplate ?? {};
  const storage = rc.spec.storage ?? {};
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(rc, n.statefulSet, 'server'),
    spec: {
      replicas,
      serviceName: n.headlessService,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'OnDelete' },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      selector: { matchLabels: sel },
      template: {
        metadata: {
          labels: { ...(pt.labels ?? {}), ...sel },
          annotations: { ...(pt.annotations ?? {}), 'tideway.dev/config-hash': configHash },
        },
        spec: {
          ...(pt.nodeSelector ? { nodeSelector: pt.nodeSelector } : {}),
          ...(pt.tolerations ? { tolerations: pt.tolerations as never } : {}),
          ...(pt.affinity ? { affinity: pt.affinity as never } : {}),
          ...(pt.securityContext ? { securityContext: pt.securityContext as never } : {}),
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'redis',
              image: imageOf(rc),
              command: ['redis-server', `${CONF_DIR}/redis.conf`],
              ports: [{ name: 'redis', containerPort: REDIS_PORT }],
              ...(rc.spec.resources ? { resources: rc.spec.resources as never } : {}),
              readinessProbe: { tcpSocket: { port: REDIS_PORT }, periodSeconds: 2, failureThreshold: 2 },
              livenessProbe: { tcpSocket: { port: REDIS_PORT }, periodSeconds: 10, failureThreshold: 6 },
              volumeMounts: [
                { name: 'data', mountPath: DATA_DIR },
                { name: 'config', mountPath: CONF_DIR, readOnly: true },
                { name: 'auth', mountPath: AUTH_DIR, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'config', configMap: { name: n.configMap } },
            { name: 'auth', secret: { secretName: n.authConfSecret, defaultMode: 0o400 } },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels: sel },
          spec: {
            accessModes: ['ReadWriteOnce'],
            ...(storage.storageClassName ? { storageClassName: storage.storageClassName } : {}),
            resources: { requests: { storage: storage.size ?? '1Gi' } },
          },
        },
      ],
    },
  };
};

const service = (rc: RedisCluster, name: string, component: string, spec: V1Service['spec']): V1Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: meta(rc, name, component),
  spec: { ports: [{ name: 'redis', port: REDIS_PORT, targetPort: REDIS_PORT, protocol: 'TCP' }], ...spec },
});

/** `<name>` follows the master, `<name>-replicas` the replicas, `<name>-headless` names every pod. */
export const servicesFor = (rc: RedisCluster): V1Service[] => {
  const n = namesOf(rc);
  const sel = selectorLabels(n.name);
  return [
    service(rc, n.masterService, 'master', { selector: { ...sel, [LABEL.role]: 'master' } }),
    service(rc, n.replicaService, 'replicas', { selector: { ...sel, [LABEL.role]: 'replica' } }),
    service(rc, n.headlessService, 'headless', {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: sel,
    }),
  ];
};

/** At most one instance down for voluntary disruptions (drains), so a drain never takes two. */
export const pdbFor = (rc: RedisCluster): V1PodDisruptionBudget => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: meta(rc, namesOf(rc).pdb, 'server'),
  spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(rc.metadata.name ?? '') } },
});
