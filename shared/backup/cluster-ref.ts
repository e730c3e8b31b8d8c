import type { Backup } from '../api/generated.ts';
import { DEFAULT_CLUSTER_KIND } from '../engines/index.ts';

/** The kinds a Backup can name (crds/backup.yaml's enum). */
export type BackupClusterKind = NonNullable<Backup['spec']['cluster']['kind']>;

export type ClusterRef = { readonly kind: BackupClusterKind; readonly name: string };

/** The cluster a Backup (or a schedule's) `spec.cluster` names; no kind is the API's first, RedisCluster. */
export const clusterRefOf = (spec: { cluster: { name: string; kind?: BackupClusterKind } }): ClusterRef => ({
  kind: spec.cluster.kind ?? (DEFAULT_CLUSTER_KIND as BackupClusterKind),
  name: spec.cluster.name,
});

/**
 * Whether a Backup is of that cluster: by kind and name, so a RedisCluster and an EtcdCluster
 * that share a name never count (or restore, or expire) each other's backups.
 */
export const isBackupOf = (b: Pick<Backup, 'spec'>, ref: ClusterRef): boolean => {
  const own = clusterRefOf(b.spec);
  return own.name === ref.name && own.kind === ref.kind;
};
