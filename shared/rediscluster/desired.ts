import { createHash } from 'node:crypto';
import type {
  V1ConfigMap,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { type RedisCluster, RedisClusterSpecDefaults } from '../api/generated.ts';
import { imageOf, LABEL, namesOf, REDIS_CONTAINER, REDIS_PORT, selectorLabels } from './names.ts';
import { QUORUM_LINES, renderAuthConf, renderRedisConf } from './redis-conf.ts';

// Siblings, not nested: a mount point cannot be made inside a read-only volume.
const CONF_DIR = '/etc/tideway/conf';
const AUTH_DIR = '/etc/tideway/auth';
/** The key of the auth-conf Secret that pods read; the other keys are Tideway's record. */
export const AUTH_CONF_KEY = 'auth.conf';
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

/** redis.conf as the cluster's spec makes it, and the ConfigMap key it is kept under. */
export const renderedConfig = (rc: RedisCluster) => {
  const conf = renderRedisConf(rc.spec.config ?? {}, {
    authInclude: `${AUTH_DIR}/${AUTH_CONF_KEY}`,
    dataDir: DATA_DIR,
    replicas: rc.spec.replicas ?? RedisClusterSpecDefaults.replicas,
  });
  return { conf, key: `redis-${hashOf(conf)}.conf` };
};

/** Before keys were named by content, pods mounted the whole ConfigMap and read this key. */
const LEGACY_CONFIG_KEY = 'redis.conf';

/**
 * The ConfigMap keys something may still read: each pod's, and the StatefulSet's own (a pod the
 * StatefulSet controller creates before it sees the new template reads that one). Keys are never
 * rewritten: a pod reads the configuration it started with until Tideway restarts it.
 */
export const configKeysInUse = (configMap: string, templates: readonly (V1PodSpec | undefined)[]) => {
  const keys = new Set<string>();
  for (const spec of templates)
    for (const v of spec?.volumes ?? []) {
      if (v.configMap?.name !== configMap) continue;
      if (!v.configMap.items) keys.add(LEGACY_CONFIG_KEY);
      for (const item of v.configMap.items ?? []) keys.add(item.key);
    }
  return keys;
};

/** A configuration without the start-up quorum lines in Tideway's part (before the user's). */
const withoutQuorum = (conf: string) => {
  const end = conf.indexOf('\n\n');
  if (end < 0) return conf;
  const own = conf.slice(0, end).split('\n');
  return `${own.filter((l) => !QUORUM_LINES.includes(l)).join('\n')}${conf.slice(end)}`;
};

/**
 * The configuration the StatefulSet mounts: the one the spec renders, or the one it mounts now
 * (`mounted`, a key of `existing`) when the two differ only by the start-up quorum lines, which
 * earlier versions wrote only with replicas: the quorum is set at run time, so upgrading Tideway
 * restarts no pod for them. A file without them is kept only while the StatefulSet has one
 * instance (`replicas`): with more, a server must start with the safe quorum (a failover may
 * promote one reconcile has not reached yet), so the pods roll to the rendered file.
 */
export const configFor = (
  rc: RedisCluster,
  o: { existing?: Record<string, string>; mounted?: string; replicas?: number } = {},
) => {
  const rendered = renderedConfig(rc);
  const current = o.mounted === undefined ? undefined : o.existing?.[o.mounted];
  const same =
    current !== undefined &&
    withoutQuorum(current) === withoutQuorum(rendered.conf) &&
    (current === rendered.conf || (o.replicas ?? 1) <= 1);
  return o.mounted !== undefined && same ? { conf: current, key: o.mounted } : rendered;
};

/**
 * One ConfigMap holds every configuration a pod of the cluster may read, each under a key named
 * by its content hash: the current one (`configFor`), and those still in use (`inUse` with their
 * contents from `existing`). A kubelet refreshes mounted ConfigMaps in running pods, so rewriting
 * one key in place would hand an unvetted redis.conf to the next restart of every pod, the master
 * included.
 */
export const configMapFor = (
  rc: RedisCluster,
  o: {
    existing?: Record<string, string>;
    inUse?: ReadonlySet<string>;
    mounted?: string;
    replicas?: number;
  } = {},
): V1ConfigMap => {
  const { conf, key } = configFor(rc, o);
  const kept = Object.fromEntries(
    Object.entries(o.existing ?? {}).filter(([k]) => o.inUse?.has(k) && k !== key),
  );
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(rc, namesOf(rc).configMap, 'config'),
    data: { ...kept, [key]: conf },
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

/**
 * The password every instance accepts (`password`), written to the include file pods read at
 * start, and the one before it (`previous`): a pod that restarts before its kubelet refreshed the
 * file still accepts that one, and Tideway can still reach it to bring it up to date.
 */
export const authConfSecretFor = (
  rc: RedisCluster,
  auth: { password: string; previous?: string },
): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta(rc, namesOf(rc).authConfSecret, 'auth'),
  type: 'Opaque',
  data: {
    [AUTH_CONF_KEY]: b64(renderAuthConf(auth.password)),
    password: b64(auth.password),
    ...(auth.previous !== undefined ? { previous: b64(auth.previous) } : {}),
  },
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

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
  /** The ConfigMap key of the current redis.conf (renderedConfig). */
  configKey: string,
  /** More than spec.replicas while the master sits beyond the new size (see reconcile). */
  replicas = rc.spec.replicas ?? RedisClusterSpecDefaults.replicas,
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
          annotations: { ...(pt.annotations ?? {}), 'tideway.dev/config-hash': configKey },
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
              name: REDIS_CONTAINER,
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
            // Only the pod's own configuration, under the name redis-server is started with.
            {
              name: 'config',
              configMap: { name: n.configMap, items: [{ key: configKey, path: 'redis.conf' }] },
            },
            {
              name: 'auth',
              secret: {
                secretName: n.authConfSecret,
                defaultMode: 0o400,
                items: [{ key: AUTH_CONF_KEY, path: AUTH_CONF_KEY }],
              },
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels: sel },
          spec: {
            accessModes: ['ReadWriteOnce'],
            ...(storage.storageClassName ? { storageClassName: storage.storageClassName } : {}),
            resources: { requests: { storage: storage.size ?? RedisClusterSpecDefaults.storage.size } },
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
