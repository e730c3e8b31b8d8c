import { z } from 'zod';
import { COMPRESSIONS, type Compression, compressionSuffix } from './compression.ts';
import { ENCRYPTION_FORMAT } from './encryption.ts';

/** The manifest next to each backup object: what it is, without reading it. */
export const zManifest = z.object({
  format: z.literal('tideway.dev/backup-manifest/v1'),
  backup: z.object({ namespace: z.string(), name: z.string(), uid: z.string() }),
  cluster: z.object({
    namespace: z.string(),
    name: z.string(),
    uid: z.string().optional(),
    /** Absent in manifests written before EtcdCluster: RedisCluster. */
    kind: z.enum(['RedisCluster', 'EtcdCluster']).optional(),
  }),
  /**
   * The server of a RedisCluster's RDB snapshot; usedMemory: what the data set took in its memory
   * (used_memory), which a restore weighs against the target's memory limit (absent before
   * 2026-11-26); maxmemoryUsage: what of it counted against maxmemory there (used_memory less
   * mem_not_counted_for_evict), which a restore weighs against the target's maxmemory, and the
   * source's maxmemory (bytes, 0: none), under which that count was kept (both absent before
   * 2026-11-27).
   */
  redis: z
    .object({
      product: z.string(),
      version: z.string(),
      usedMemory: z.number().int().nonnegative().optional(),
      maxmemoryUsage: z.number().int().nonnegative().optional(),
      maxmemory: z.number().int().nonnegative().optional(),
    })
    .optional(),
  /** The server of an EtcdCluster's snapshot (a bbolt database file, its SHA-256 appended by etcd). */
  etcd: z.object({ version: z.string() }).optional(),
  /** The instance the snapshot came from. */
  source: z.string(),
  object: z.string(),
  /** Bytes stored, and bytes of the snapshot (RDB or etcd database) inside. */
  size: z.number().int().nonnegative(),
  rdbSize: z.number().int().nonnegative(),
  /** SHA-256 of the stored bytes. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  compression: z.enum(COMPRESSIONS),
  /** null when the object is not encrypted; the key is never here, only where it lives. */
  encryption: z.object({ format: z.literal(ENCRYPTION_FORMAT), secretName: z.string() }).nullable(),
  startedAt: z.string(),
  /** When the snapshot was asked of its source (Redis forks then): the point in time the data is from. */
  takenAt: z.string().optional(),
  created: z.string(),
});
export type Manifest = z.infer<typeof zManifest>;

/** A key prefix with the separator it needs ('' stays ''). */
const dir = (prefix: string) => (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`);

/**
 * Where a cluster's backups live in a store: everything under it belongs to this one cluster.
 * RedisClusters keep the layout they always had; another kind's clusters live under `_<engine>/`
 * (no object name has a `_`), so namesakes of two kinds never share a folder.
 */
export const clusterPrefix = (prefix: string, namespace: string, cluster: string, kind?: 'EtcdCluster') =>
  `${dir(prefix)}${namespace}/${kind === 'EtcdCluster' ? '_etcd/' : ''}${cluster}/`;

/**
 * A backup's object and manifest keys: one Backup object (by uid) always writes the same key, so a
 * redone backup replaces its own earlier attempt and never another's.
 */
export const backupKeys = (o: {
  prefix: string;
  namespace: string;
  cluster: string;
  backup: string;
  uid: string;
  compression: Compression;
  encrypted: boolean;
  /** An EtcdCluster's snapshot is a `.db` in its own folder; a RedisCluster's an `.rdb`. */
  kind?: 'RedisCluster' | 'EtcdCluster';
}) => {
  const etcd = o.kind === 'EtcdCluster' ? 'EtcdCluster' : undefined;
  const base = `${clusterPrefix(o.prefix, o.namespace, o.cluster, etcd)}${o.backup}-${o.uid.slice(0, 8)}`;
  return {
    object: `${base}.${etcd ? 'db' : 'rdb'}${compressionSuffix(o.compression)}${o.encrypted ? '.enc' : ''}`,
    manifest: `${base}.manifest.json`,
  };
};
