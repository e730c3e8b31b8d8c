import type { KubeConfig } from '@kubernetes/client-node';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import type { Compression } from '../../shared/backup/compression.ts';
import { keyOfLocation, s3KeyOf } from '../../shared/backup/location.ts';
import { type Manifest, zManifest } from '../../shared/backup/manifest.ts';
import { type BackupStoreSpec, type ResolvedStore, resolveStore } from '../../shared/backup/store-config.ts';
import { RestoreError } from './errors.ts';
import { listBackups, readBackup, readCluster } from './kube.ts';
import { created } from './one-at-a-time.ts';
import type { SourceRef } from './state.ts';

/** A stored RDB to load, checked against what was recorded when it was stored. */
export type StoredSource = {
  /** In words, for status.source and messages: `backup nightly`, `s3://bucket/key`. */
  describe: string;
  key: string;
  sha256: string;
  size: number;
  rdbSize: number;
  compression: Compression;
  /** The server that wrote it, from the manifest. */
  redis: Manifest['redis'];
};

export type Resolved = { source: StoredSource; store: ResolvedStore };

import { pickLatest } from '../../shared/backup/latest.ts';

export { pickLatest };

/** The manifest beside a backup object: `<base>.rdb[.zst|.gz][.enc]` → `<base>.manifest.json`. */
export const manifestKeyOf = (objectKey: string) =>
  `${objectKey.replace(/\.(rdb|db)(\.zst|\.gz)?(\.enc)?$/, '')}.manifest.json`;

export { keyOfLocation, s3KeyOf };

/** What a Restore's spec asks for, in words (status.source, the printer column). */
export const describeRef = (ref: SourceRef, restore: Restore) => {
  if (ref.kind === 's3') return `s3://${restore.spec.source.s3?.store.s3.bucket ?? ''}/${ref.key}`;
  return restore.spec.source.latest ? `backup ${ref.name} (latest)` : `backup ${ref.name}`;
};

/**
 * What to restore, decided once (recorded in the Restore's state): `latest` becomes a particular
 * Backup here, so later runs — after the safety backup, itself newer, exists — load the same one.
 */
export const chooseSource = async (kube: KubeConfig, restore: Restore): Promise<SourceRef> => {
  const namespace = restore.metadata.namespace ?? '';
  const cluster = restore.spec.cluster.name;
  const { source } = restore.spec;
  if (source.s3) return { kind: 's3', key: s3KeyOf(source.s3.store.s3.prefix, source.s3.key) };
  const backup = source.backup
    ? await readBackup(kube, namespace, source.backup.name)
    : pickLatest(await listBackups(kube, namespace), { kind: 'RedisCluster', name: cluster });
  if (!backup)
    throw new RestoreError(
      source.backup ? 'BackupNotFound' : 'NoCompletedBackup',
      source.backup
        ? `Backup ${source.backup.name} does not exist in namespace ${namespace}: name an existing Backup in spec.source.backup.name`
        : `RedisCluster ${cluster} has no Completed Backup in namespace ${namespace} (safety backups of restores do not count for latest: restore one by name)`,
      false,
    );
  checkRedisBackup(clusterRefOf(backup.spec), `Backup ${backup.metadata.name}`);
  checkCompleted(backup);
  if (deletedBefore(backup, restore))
    throw new RestoreError(
      'BackupDeleting',
      `Backup ${backup.metadata.name} is being deleted (its object goes once the restores that use it finish): restore another Backup`,
      false,
    );
  return { kind: 'backup', name: backup.metadata.name, uid: backup.metadata.uid ?? '' };
};

/**
 * A Backup deleted before the Restore was made: kept only for the restores that named it then
 * (the finalizer keeps it for them, Pending ones included), its object goes after them. Creation
 * and deletion times have seconds only: within the same second the Restore is not refused.
 */
export const deletedBefore = (b: Pick<Backup, 'metadata'>, restore: Pick<Restore, 'metadata'>) =>
  !!b.metadata.deletionTimestamp && new Date(b.metadata.deletionTimestamp).getTime() < created(restore);

/**
 * A Restore loads a RedisCluster: an EtcdCluster's snapshot is refused before anything is read,
 * whether named by its Backup (`what`) or met as an object whose manifest says so.
 */
export const checkRedisBackup = (of: { kind?: string | undefined; name: string }, what: string) => {
  const kind = of.kind ?? 'RedisCluster';
  if (kind !== 'RedisCluster')
    throw new RestoreError(
      'WrongClusterKind',
      `${what} is a backup of ${kind} ${of.name}: a Restore loads RedisCluster backups only`,
      false,
    );
};

const checkCompleted = (b: Backup) => {
  const phase = b.status?.phase;
  if (phase !== 'Completed')
    throw new RestoreError(
      'BackupNotCompleted',
      `Backup ${b.metadata.name} is ${phase ?? 'Pending'}: only a Completed Backup can be restored${phase === 'Failed' ? '' : '; create the Restore again once it has completed'}`,
      false,
    );
};

/** The manifest beside an object; a restore loads only what it can check. */
const readManifest = async (store: ResolvedStore['store'], key: string): Promise<Manifest> => {
  const at = manifestKeyOf(key);
  const raw = await store.get(at, 1024 * 1024);
  if (raw === undefined)
    throw new RestoreError(
      'ManifestNotFound',
      `no manifest at ${store.url(at)}: Tideway restores only what it can verify, an object it stored with its manifest (SHA-256, size, compression, encryption) beside it`,
      false,
    );
  let json: unknown;
  try {
    json = JSON.parse(raw.toString());
  } catch {
    json = undefined;
  }
  const m = zManifest.safeParse(json);
  if (!m.success)
    throw new RestoreError('ManifestInvalid', `${store.url(at)} is not a Tideway backup manifest`, false);
  return m.data;
};

/**
 * The Secret that holds the key to decrypt with, or '' for a plain object. The user's store may
 * name it (another namespace's name), else the manifest does. When the user's store asks for
 * encryption and the object's checksum is not pinned by a Backup's status (a raw S3 key), the
 * manifest cannot turn decryption off: whoever can write the bucket could plant a plain object
 * and a manifest that says so, and authenticated encryption is what would refuse it.
 */
export const decryptionSecret = (o: {
  wanted: string;
  manifest: { secretName?: string | undefined } | null | undefined;
  pinned: boolean;
  url: string;
}): string => {
  if (o.manifest) return o.wanted || o.manifest.secretName || '';
  if (o.wanted && !o.pinned)
    throw new RestoreError(
      'EncryptionMismatch',
      `${o.url} is not encrypted (its manifest says so), but the store names the key Secret ${o.wanted}: refusing an object that encryption cannot vouch for; restore it with a store without encryption if you trust it`,
      false,
    );
  return '';
};

/**
 * The recorded source made loadable: where its object is, what it must hash to, how to read it,
 * with the store's credentials and the decryption key from their Secrets (in the Restore's
 * namespace). For a Backup, its status (the record the backup function wrote) and the manifest
 * must agree; an object or a manifest changed since is refused here or when the object is read.
 */
export const resolveSource = async (
  kube: KubeConfig,
  restore: Restore,
  ref: SourceRef,
): Promise<Resolved> => {
  const namespace = restore.metadata.namespace ?? '';
  let spec: BackupStoreSpec;
  let key: string;
  let recorded: { sha256?: string | undefined; size?: number | undefined; rdbSize?: number | undefined } = {};
  if (ref.kind === 's3') {
    const s3 = restore.spec.source.s3;
    if (!s3) throw new RestoreError('SourceChanged', 'spec.source.s3 is gone', false);
    spec = s3.store;
    key = ref.key;
  } else {
    const b = await readBackup(kube, namespace, ref.name);
    if (!b || (ref.uid && b.metadata.uid !== ref.uid))
      throw new RestoreError(
        'BackupNotFound',
        `Backup ${ref.name} ${b ? 'was deleted and created again' : 'was deleted'} after this restore chose it: create a new Restore`,
        false,
      );
    checkRedisBackup(clusterRefOf(b.spec), `Backup ${b.metadata.name}`);
    checkCompleted(b);
    const storeOf = async () =>
      b.spec.store ?? (await readCluster(kube, namespace, b.spec.cluster.name))?.spec.backup?.store;
    const found = (b.status?.store as BackupStoreSpec | undefined) ?? (await storeOf());
    if (!found)
      throw new RestoreError(
        'NoStore',
        `Backup ${ref.name} records no store (status.store), and neither it nor RedisCluster ${b.spec.cluster.name} names one`,
        false,
      );
    spec = found;
    const k = keyOfLocation(b.status?.location ?? '', spec.s3.bucket);
    if (!k)
      throw new RestoreError(
        'SourceMismatch',
        `Backup ${ref.name} is at ${b.status?.location ?? '(no location)'}, not in bucket ${spec.s3.bucket} of its store`,
        false,
      );
    key = k;
    recorded = { sha256: b.status?.sha256, size: b.status?.size, rdbSize: b.status?.rdbSize };
  }
  // Credentials first (no key needed to read the manifest), then the manifest says how to read it.
  const plain = await resolveStore({ kube, namespace, spec: { ...spec, encryption: { secretName: '' } } });
  const manifest = await readManifest(plain.store, key);
  if (
    (recorded.sha256 !== undefined && recorded.sha256 !== manifest.sha256) ||
    (recorded.size !== undefined && recorded.size !== manifest.size) ||
    (recorded.rdbSize !== undefined && recorded.rdbSize !== manifest.rdbSize)
  )
    throw new RestoreError(
      'ManifestMismatch',
      `the manifest of ${plain.store.url(key)} does not describe what Backup ${ref.kind === 'backup' ? ref.name : ''} recorded (SHA-256 ${recorded.sha256}, ${recorded.size} bytes): one of them changed after the backup`,
      false,
    );
  checkRedisBackup(manifest.cluster, plain.store.url(key));
  if (!manifest.redis)
    throw new RestoreError(
      'ManifestInvalid',
      `${plain.store.url(key)}: its manifest names no Redis server`,
      false,
    );
  const secretName = decryptionSecret({
    wanted: spec.encryption?.secretName ?? '',
    manifest: manifest.encryption,
    pinned: recorded.sha256 !== undefined,
    url: plain.store.url(key),
  });
  const store = await resolveStore({
    kube,
    namespace,
    spec: { ...spec, compression: manifest.compression, encryption: { secretName } },
  });
  return {
    store,
    source: {
      describe: ref.kind === 'backup' ? `backup ${ref.name}` : store.store.url(key),
      key,
      sha256: manifest.sha256,
      size: manifest.size,
      rdbSize: manifest.rdbSize,
      compression: manifest.compression,
      redis: manifest.redis,
    },
  };
};
