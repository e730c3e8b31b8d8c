import { CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { type EtcdCluster, zEtcdCluster } from '../../../shared/api/generated.ts';
import { ConfigurationError } from '../../../shared/backup/errors.ts';
import { readSecret } from '../../../shared/backup/store-config.ts';
import { EtcdError } from '../../../shared/etcd/errors.ts';
import { createEtcdClient } from '../../../shared/etcd/gateway-client.ts';
import type { EtcdTls } from '../../../shared/etcd/http.ts';
import {
  type EtcdSource,
  type EtcdSourceCandidate,
  etcdBackupSources,
  noEtcdSourceReason,
} from '../../../shared/etcdcluster/backup-sources.ts';
import { memberOf } from '../../../shared/etcdcluster/desired.ts';
import { listMemberPods } from '../../../shared/etcdcluster/kube.ts';
import { endpointOf as memberEndpoint } from '../../../shared/etcdcluster/names.ts';
import { clientTlsOf } from '../../../shared/etcdcluster/tls/ensure.ts';
import { tlsSecretNames } from '../../../shared/etcdcluster/tls/sans.ts';
import { isNotFound } from '../../../shared/kube/errors.ts';
import { TIDEWAY_KINDS } from '../../../shared/kube/resources.ts';
import { SnapshotError } from '../../../shared/redis/snapshot.ts';
import type { BackupTarget, SnapshotSource } from './types.ts';

const CALL_MS = 3000;
/** No byte from the member for this long mid-snapshot: it is lost, another one is tried. */
const IDLE_MS = 30_000;

type Source = SnapshotSource & { readonly member: EtcdSource };

/** The EtcdCluster of that name, or undefined when there is none. */
export const readEtcdCluster = async (
  kube: KubeConfig,
  namespace: string,
  name: string,
): Promise<EtcdCluster | undefined> => {
  try {
    return zEtcdCluster.parse(
      await kube
        .makeApiClient(CustomObjectsApi)
        .getNamespacedCustomObject({ ...TIDEWAY_KINDS.EtcdCluster, namespace, name }),
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};

const endpointOf = (c: EtcdCluster, p: V1Pod) =>
  p.status?.podIP && p.status.phase === 'Running' ? memberEndpoint(c, p.status.podIP) : undefined;

const TLS_KEYS = ['tls.crt', 'tls.key', 'ca.crt'] as const;

/**
 * With spec.tls: the client certificate members require, from the cluster's client Secret (by
 * name: backup may get Secrets, never list them). Missing or incomplete, the Backup fails at once
 * with what to fix: no member would answer without it.
 */
export const readClientTls = async (kube: KubeConfig, c: EtcdCluster): Promise<EtcdTls | undefined> => {
  if (!c.spec.tls) return undefined;
  const name = tlsSecretNames(c).client;
  const d = await readSecret(kube, c.metadata.namespace ?? '', name);
  if (!d)
    throw new ConfigurationError(
      'ClusterTLSSecretNotFound',
      `Secret ${name}, the client certificate of EtcdCluster ${c.metadata.name}, does not exist: ${c.spec.tls.client ? 'create it (spec.tls.client.secretName)' : 'etcd-reconcile makes it; see the cluster’s conditions'}`,
    );
  const missing = TLS_KEYS.filter((k) => !d[k]?.length);
  if (missing.length > 0)
    throw new ConfigurationError(
      'ClusterTLSSecretInvalid',
      `Secret ${name}, the client certificate of EtcdCluster ${c.metadata.name}, has no ${missing.join(' and no ')}`,
    );
  return clientTlsOf(c, Object.fromEntries(TLS_KEYS.map((k) => [k, d[k]?.toString() ?? ''])));
};

/**
 * An EtcdCluster's snapshots: etcd's own (maintenance/snapshot, the bytes `etcdctl snapshot save`
 * writes, its SHA-256 appended and checked as it streams) from a voting member that follows the
 * current leader; members of another cluster (an answer with a foreign cluster id) never count.
 */
export const etcdTarget = (kube: KubeConfig, namespace: string, ec: EtcdCluster): BackupTarget => ({
  ref: { kind: 'EtcdCluster', name: ec.metadata.name },
  object: ec,
  defaultStore: ec.spec.backup?.store,
  sources: async (preference) => {
    const now = (await readEtcdCluster(kube, namespace, ec.metadata.name)) ?? ec;
    const pods = await listMemberPods(kube, now);
    const tls = await readClientTls(kube, now);
    const client = createEtcdClient({
      endpoints: pods.flatMap((p) => endpointOf(now, p) ?? []),
      ...(tls ? { tls } : {}),
    });
    try {
      const candidates: EtcdSourceCandidate[] = await Promise.all(
        pods.flatMap((p) => {
          const member = memberOf(p);
          if (!member) return [];
          const endpoint = endpointOf(now, p);
          const status = endpoint
            ? client.status(endpoint, { timeoutMs: CALL_MS }).catch(() => undefined)
            : Promise.resolve(undefined);
          return [
            status.then((s) => ({
              member,
              pod: p.metadata?.name ?? member,
              endpoint,
              deleting: !!p.metadata?.deletionTimestamp,
              status: s,
            })),
          ];
        }),
      );
      const list: Source[] = etcdBackupSources(candidates, preference, now.status?.clusterID).map((m) => ({
        pod: m.pod,
        product: 'etcd',
        version: m.status.version,
        member: m,
      }));
      return { list, none: noEtcdSourceReason(candidates, now.status?.clusterID) };
    } finally {
      client.close();
    }
  },
  open: async (source, signal) => {
    const { member } = source as Source;
    const tls = await readClientTls(kube, ec);
    const client = createEtcdClient({ endpoints: [member.endpoint], ...(tls ? { tls } : {}) });
    try {
      const snap = await client.snapshot({
        endpoint: member.endpoint,
        signal,
        timeoutMs: 30_000,
        idleTimeoutMs: IDLE_MS,
      });
      snap.stream.once('close', () => client.close());
      return { data: snap.stream, total: snap.size };
    } catch (error) {
      client.close();
      throw asSourceError(error, source.pod) ?? error;
    }
  },
  sourceLost: (error) => asSourceError(error),
});

/** An etcd failure of one member (unreachable, cut off, a damaged stream): another may serve. */
const asSourceError = (error: unknown, pod?: string): SnapshotError | undefined => {
  if (error instanceof SnapshotError) return error;
  if (!(error instanceof EtcdError) || error.reason === 'Aborted') return undefined;
  const reason = error.reason === 'Connection' || error.reason === 'Timeout' ? 'SourceLost' : 'SourceRefused';
  return new SnapshotError(reason, `${pod ?? error.endpoint ?? 'etcd'}: ${error.message}`, { cause: error });
};
