import { z } from 'zod';
import {
  type Backup,
  BackupSpecDefaults,
  type EtcdCluster,
  EtcdClusterSpecDefaults,
} from '../../api/generated.ts';
import { clusterRefOf } from '../../backup/cluster-ref.ts';
import { COMPRESSIONS } from '../../backup/compression.ts';
import type { BackupStoreSpec } from '../../backup/store-config.ts';
import { bytesOf } from '../../kube/quantity.ts';

/** What the first member's restore step is told: where the snapshot is and what it must be. */
export const zRestoreSource = z.object({
  /** For messages: `backup <name>`. */
  backup: z.string(),
  store: z.custom<BackupStoreSpec>((v) => typeof v === 'object' && v !== null && 's3' in v),
  key: z.string().min(1),
  /** SHA-256 and size of the stored object; dbSize: bytes of the snapshot inside. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().nonnegative(),
  dbSize: z.number().int().positive(),
  compression: z.enum(COMPRESSIONS),
  /** The Secret of the decryption key, '' when the object is not encrypted. */
  encryptionSecret: z.string(),
});
export type RestoreSource = z.infer<typeof zRestoreSource>;

/** Why a cluster cannot start from its backup; `retry`: it may change by itself (a backup still running). */
export type SourceProblem = { reason: string; message: string; retry: boolean };

const NEEDED_BEYOND_DB = 128 * 1024 * 1024;
const mib = (b: number) => Math.ceil(b / (1024 * 1024));
const minor = (v: string | undefined) => /^3\.(\d+)/.exec(v ?? '')?.[1];

/**
 * The snapshot `spec.bootstrap.fromBackup` names, checked before any pod exists: a Completed Backup
 * of an EtcdCluster (never a Redis RDB), recorded with its store, location and checksum, of an etcd
 * version the cluster can run (3.5 cannot read a 3.6 snapshot).
 */
export const restoreSourceOf = (
  c: Pick<EtcdCluster, 'spec'>,
  name: string,
  b: Backup | undefined,
): RestoreSource | SourceProblem => {
  if (!b)
    return {
      reason: 'BackupNotFound',
      message: `Backup ${name} (spec.bootstrap.fromBackup) does not exist in this namespace: create the cluster from an existing Backup`,
      retry: true,
    };
  const of = clusterRefOf(b.spec);
  if (of.kind !== 'EtcdCluster')
    return {
      reason: 'WrongClusterKind',
      message: `Backup ${name} is a backup of ${of.kind} ${of.name}: an EtcdCluster starts only from a backup of an EtcdCluster`,
      retry: false,
    };
  const s = b.status ?? {};
  if (s.phase !== 'Completed')
    return s.phase === 'Failed'
      ? {
          reason: 'BackupFailed',
          message: `Backup ${name} failed (${s.error?.reason ?? 'no reason'}): nothing to start from; delete this EtcdCluster and create it from a Completed Backup`,
          retry: false,
        }
      : {
          reason: 'BackupNotCompleted',
          message: `Backup ${name} is ${s.phase ?? 'Pending'}: the cluster starts once it has completed`,
          retry: true,
        };
  const store = (s.store ?? b.spec.store) as BackupStoreSpec | undefined;
  const prefix = store ? `s3://${store.s3.bucket}/` : '';
  if (!store || !s.location?.startsWith(prefix) || s.location.length === prefix.length || !s.sha256)
    return {
      reason: 'SourceMismatch',
      message: `Backup ${name} records no store, location or SHA-256 to restore from (status.store, status.location, status.sha256)`,
      retry: false,
    };
  const want = minor(c.spec.version ?? EtcdClusterSpecDefaults.version);
  const have = minor(s.etcdVersion);
  if (want && have && Number(have) > Number(want))
    return {
      reason: 'BackupTooNew',
      message: `Backup ${name} was taken from etcd ${s.etcdVersion}; version ${c.spec.version} cannot read its data: set spec.version to 3.${have} or newer`,
      retry: false,
    };
  // Room for the database, its WAL (64 MiB segments) and a margin: etcdutl writes into the volume
  // directly, and a restore cut short by a full disk leaves a member that cannot start.
  const dbSize = s.rdbSize ?? 0;
  const room = bytesOf(c.spec.storage?.size ?? EtcdClusterSpecDefaults.storage.size);
  if (room !== undefined && dbSize + NEEDED_BEYOND_DB > room)
    return {
      reason: 'BackupTooLarge',
      message: `Backup ${name} holds a ${mib(dbSize)} MiB database; with its WAL it needs about ${mib(dbSize + NEEDED_BEYOND_DB)} MiB, more than spec.storage.size ${c.spec.storage?.size ?? EtcdClusterSpecDefaults.storage.size}: create the cluster with larger storage`,
      retry: false,
    };
  return {
    backup: name,
    store,
    key: s.location.slice(prefix.length),
    sha256: s.sha256,
    size: s.size ?? 0,
    dbSize: s.rdbSize ?? 0,
    compression: store.compression ?? BackupSpecDefaults.store.compression,
    encryptionSecret: store.encryption?.secretName ?? '',
  };
};

export const isSourceProblem = (x: RestoreSource | SourceProblem): x is SourceProblem => 'reason' in x;
