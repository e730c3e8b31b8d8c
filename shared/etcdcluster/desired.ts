import type {
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1ResourceRequirements,
  V1Service,
} from '@kubernetes/client-node';
import { type EtcdCluster, EtcdClusterSpecDefaults } from '../api/generated.ts';
import {
  CLIENT_PORT,
  imageOf,
  MEMBER_LABEL,
  METRICS_PORT,
  namesOf,
  OWNER_UID,
  PEER_PORT,
  quorumOf,
  schemeOf,
  selectorLabels,
} from './names.ts';
import type { RestoreSource } from './restore/source.ts';
import { podTemplateOf, TEMPLATE_ANNOTATION } from './template.ts';
import { tlsSecretNames } from './tls/sans.ts';

const DATA_MOUNT = '/var/run/etcd';

type Owner = Pick<EtcdCluster, 'apiVersion' | 'kind' | 'metadata' | 'spec'> & {
  status?: EtcdCluster['status'];
};

/** The cluster as controller owner: the garbage collector removes pods and Services with it. */
export const ownerRef = (c: Owner) => ({
  apiVersion: c.apiVersion,
  kind: c.kind,
  name: c.metadata.name ?? '',
  uid: c.metadata.uid ?? '',
  controller: true,
  blockOwnerDeletion: true,
});

const meta = (c: Owner, name: string, component: string) => ({
  name,
  namespace: namesOf(c).namespace,
  labels: { ...selectorLabels(c.metadata.name ?? ''), 'app.kubernetes.io/component': component },
  ownerReferences: [ownerRef(c)],
});

/**
 * `<name>` for clients (ready members only), `<name>-peers` headless and with unready addresses
 * published: members find each other by name before any of them is ready (etcd needs a quorum to
 * be ready at all).
 */
export const servicesFor = (c: Owner): V1Service[] => {
  const n = namesOf(c);
  const selector = selectorLabels(n.name);
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(c, n.clientService, 'client'),
      spec: {
        selector,
        ports: [{ name: 'client', port: CLIENT_PORT, targetPort: CLIENT_PORT }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(c, n.peerService, 'peers'),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector,
        ports: [
          { name: 'client', port: CLIENT_PORT, targetPort: CLIENT_PORT },
          { name: 'peer', port: PEER_PORT, targetPort: PEER_PORT },
        ],
      },
    },
  ];
};

/**
 * Voluntary disruptions (drains) keep a quorum of the larger of the desired size and the voting
 * members there are now (while scaling down, or stuck above the size, the member list is larger).
 */
export const pdbFor = (c: Owner): V1PodDisruptionBudget => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: meta(c, namesOf(c).pdb, 'members'),
  spec: {
    // A learner's pod matches the selector but does not vote: counted as one more that must stay,
    // or a drain could take two voters of three while a member is added.
    minAvailable:
      quorumOf(Math.max(c.spec.size ?? EtcdClusterSpecDefaults.size, c.status?.size ?? 0)) +
      (c.status?.members ?? []).filter((m) => m.learner).length,
    selector: { matchLabels: selectorLabels(namesOf(c).name) },
  },
});

/** A member's volume. No owner reference: deleting the cluster keeps its data (docs/etcd.md). */
export const pvcFor = (c: Owner, member: string): V1PersistentVolumeClaim => {
  const n = namesOf(c);
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: n.pvc(member),
      namespace: n.namespace,
      labels: { ...selectorLabels(n.name), [MEMBER_LABEL]: member },
      annotations: { [OWNER_UID]: c.metadata.uid ?? '' },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: c.spec.storage?.size ?? EtcdClusterSpecDefaults.storage.size } },
      ...(c.spec.storage?.storageClassName ? { storageClassName: c.spec.storage.storageClassName } : {}),
    },
  };
};

/** How a member starts: in a new cluster, or joining one that exists (after `member add`). */
export type Join = {
  state: 'new' | 'existing';
  /** `--initial-cluster`: every member of the cluster it starts in, itself included. */
  initialCluster: readonly string[];
};

/** How the first member of a cluster made from a backup gets its data: the snapshot, Tideway's image. */
export type RestoreFrom = { source: RestoreSource; tidewayImage: string };

/** The init containers that fetch and restore it, and what they read. */
export const RESTORE_STEPS = { fetch: 'fetch-backup', restore: 'restore-snapshot' } as const;
const RESTORE_DIR = '/restore';
const SECRETS_DIR = '/etc/tideway/secrets';

/**
 * The first member's data from a backup, before etcd starts: Tideway's image fetches the object
 * into an emptyDir, checked (SHA-256 of the record, authenticated decryption, etcd's own hash:
 * shared/etcdcluster/restore/), with the store's Secrets mounted as files; then etcd's image runs
 * `etcdutl snapshot restore` into the member's volume as a one-member cluster of this very name
 * and token. The others join it as learners, one at a time, as in a scale-up.
 */
const restoreSteps = (c: Owner, member: string, r: RestoreFrom) => {
  const n = namesOf(c);
  const { source } = r;
  const secrets = [source.store.s3.credentialsSecret.name, source.encryptionSecret].filter(
    (x, i, all) => x && all.indexOf(x) === i,
  );
  const secretVolume = (i: number) => `restore-secret-${i}`;
  return {
    initContainers: [
      {
        name: RESTORE_STEPS.fetch,
        image: r.tidewayImage,
        // The image holds the code as JavaScript (docs/image.md).
        command: ['node', '--no-experimental-strip-types', '/app/shared/etcdcluster/restore/main.js'],
        env: [
          { name: 'TIDEWAY_RESTORE_SOURCE', value: JSON.stringify(source) },
          { name: 'TIDEWAY_RESTORE_OUT', value: `${RESTORE_DIR}/snapshot.db` },
          { name: 'TIDEWAY_SECRETS_DIR', value: SECRETS_DIR },
          { name: 'TIDEWAY_NAMESPACE', value: n.namespace },
          { name: 'TIDEWAY_RESTORE_DATA_DIR', value: `${DATA_MOUNT}/data` },
        ],
        volumeMounts: [
          { name: 'restore', mountPath: RESTORE_DIR },
          // To see whether the member's data is there already (read only: etcdutl writes it).
          { name: 'data', mountPath: DATA_MOUNT, readOnly: true },
          ...secrets.map((s, i) => ({
            name: secretVolume(i),
            mountPath: `${SECRETS_DIR}/${s}`,
            readOnly: true,
          })),
        ],
      },
      {
        name: RESTORE_STEPS.restore,
        image: imageOf(c),
        command: ['/usr/local/bin/etcdutl'],
        args: [
          'snapshot',
          'restore',
          `${RESTORE_DIR}/snapshot.db`,
          `--data-dir=${DATA_MOUNT}/data`,
          `--name=${member}`,
          `--initial-cluster=${member}=${n.peerURL(member)}`,
          `--initial-cluster-token=${clusterToken(c)}`,
          `--initial-advertise-peer-urls=${n.peerURL(member)}`,
        ],
        volumeMounts: [
          { name: 'data', mountPath: DATA_MOUNT },
          { name: 'restore', mountPath: RESTORE_DIR, readOnly: true },
        ],
        // etcdutl writes no termination message: its last words say why it failed.
        terminationMessagePolicy: 'FallbackToLogsOnError',
      },
    ],
    volumes: [
      { name: 'restore', emptyDir: {} },
      // Optional: once the data is in the volume the steps read no Secret (main.ts), and one
      // deleted or rotated away since must not keep the pod from starting again after a reboot
      // (the steps run again then). Before that, a missing one fails the fetch with its name.
      ...secrets.map((s, i) => ({ name: secretVolume(i), secret: { secretName: s, optional: true } })),
    ],
  };
};

const TLS_MOUNT = '/etc/etcd/tls';
/**
 * Client certificates required on both ports; each side trusts its own CA (a client certificate
 * must not pass as a peer's). The server certificate doubles as the client certificate of etcd's
 * own gateway, hence clientAuth on it.
 */
const TLS_ARGS = [
  `--cert-file=${TLS_MOUNT}/server/tls.crt`,
  `--key-file=${TLS_MOUNT}/server/tls.key`,
  `--trusted-ca-file=${TLS_MOUNT}/server/ca.crt`,
  '--client-cert-auth=true',
  `--peer-cert-file=${TLS_MOUNT}/peer/tls.crt`,
  `--peer-key-file=${TLS_MOUNT}/peer/tls.key`,
  `--peer-trusted-ca-file=${TLS_MOUNT}/peer/ca.crt`,
  '--peer-client-cert-auth=true',
];

const clusterToken = (c: Owner) => `${namesOf(c).name}-${c.metadata.uid ?? ''}`;

/**
 * A member's pod, on its own volume. Its flags only matter the first time it starts: with data
 * in its volume, etcd starts from that and ignores --initial-cluster*. `restore`: the first member
 * of a cluster made from a backup starts from its snapshot.
 */
export const podFor = (c: Owner, member: string, join: Join, restore?: RestoreFrom): V1Pod => {
  const n = namesOf(c);
  const steps = restore ? restoreSteps(c, member, restore) : undefined;
  const scheme = schemeOf(c);
  const args = [
    `--name=${member}`,
    `--data-dir=${DATA_MOUNT}/data`,
    `--listen-peer-urls=${scheme}://0.0.0.0:${PEER_PORT}`,
    `--listen-client-urls=${scheme}://0.0.0.0:${CLIENT_PORT}`,
    // Metrics and /health stay http: a probe presents no client certificate.
    `--listen-metrics-urls=http://0.0.0.0:${METRICS_PORT}`,
    `--advertise-client-urls=${n.clientURL(member)}`,
    `--initial-advertise-peer-urls=${n.peerURL(member)}`,
    `--initial-cluster=${join.initialCluster.map((m) => `${m}=${n.peerURL(m)}`).join(',')}`,
    `--initial-cluster-state=${join.state}`,
    `--initial-cluster-token=${clusterToken(c)}`,
    ...(c.spec.tls ? TLS_ARGS : []),
  ];
  const tls = c.spec.tls ? tlsSecretNames(c) : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...meta(c, member, 'member'),
      labels: { ...meta(c, member, 'member').labels, [MEMBER_LABEL]: member },
      annotations: { [TEMPLATE_ANNOTATION]: podTemplateOf(c) },
    },
    spec: {
      hostname: member,
      subdomain: n.peerService,
      restartPolicy: 'Always',
      ...(steps ? { initContainers: steps.initContainers } : {}),
      containers: [
        {
          name: 'etcd',
          image: imageOf(c),
          command: ['/usr/local/bin/etcd'],
          args,
          ports: [
            { name: 'client', containerPort: CLIENT_PORT },
            { name: 'peer', containerPort: PEER_PORT },
            { name: 'metrics', containerPort: METRICS_PORT },
          ],
          // Ready when the member has a leader and no alarm (serializable: no quorum read, so a
          // learner catching up is not held back by it).
          readinessProbe: {
            httpGet: { path: '/health?serializable=true', port: METRICS_PORT },
            periodSeconds: 2,
            failureThreshold: 3,
          },
          resources: (c.spec.resources ?? {}) as V1ResourceRequirements,
          volumeMounts: [
            { name: 'data', mountPath: DATA_MOUNT },
            ...(tls
              ? [
                  { name: 'tls-peer', mountPath: `${TLS_MOUNT}/peer`, readOnly: true },
                  { name: 'tls-server', mountPath: `${TLS_MOUNT}/server`, readOnly: true },
                ]
              : []),
          ],
        },
      ],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: n.pvc(member) } },
        ...(steps?.volumes ?? []),
        // The kubelet swaps renewed files in place; etcd reads them at every handshake.
        ...(tls
          ? [
              { name: 'tls-peer', secret: { secretName: tls.peer } },
              { name: 'tls-server', secret: { secretName: tls.server } },
            ]
          : []),
      ],
    },
  };
};

/**
 * How a member pod's etcd joins the first time it starts, read back from its flags (podFor's):
 * the member names of its `--initial-cluster`.
 */
export const joinOf = (pod: V1Pod): Join | undefined => {
  const args = pod.spec?.containers.find((x) => x.name === 'etcd')?.args ?? [];
  const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const state = flag('initial-cluster-state');
  const cluster = flag('initial-cluster');
  if ((state !== 'new' && state !== 'existing') || cluster === undefined) return undefined;
  return { state, initialCluster: cluster.split(',').flatMap((m) => m.split('=')[0] || []) };
};

/** The member a pod or PVC of this cluster is for. */
export const memberOf = (o: { metadata?: { labels?: Record<string, string> } }) =>
  o.metadata?.labels?.[MEMBER_LABEL];
