import type { Readable } from 'node:stream';
import type { ClusterRef } from '../../../shared/backup/cluster-ref.ts';
import type { BackupStoreSpec } from '../../../shared/backup/store-config.ts';
import type { SnapshotError } from '../../../shared/redis/snapshot.ts';

/** An instance or member a snapshot can be taken from. */
export type SnapshotSource = {
  readonly pod: string;
  /** redis, valkey, etcd. */
  readonly product: string;
  readonly version: string;
  /** Bytes its data set takes in memory (a Redis server's used_memory), when it says. */
  readonly usedMemory?: number;
  /** What of it Redis weighs against maxmemory (used_memory less its replication and AOF buffers). */
  readonly maxmemoryUsage?: number;
  /** Its maxmemory (bytes, 0: none), under which Redis kept that count. */
  readonly maxmemory?: number;
};

export type OpenedSnapshot = {
  readonly data: Readable;
  /** Bytes the stream yields, when the server says so up front. */
  readonly total: number | undefined;
};

/**
 * What the backup function needs of a cluster, whatever its engine: the engine's rules for where a
 * snapshot may come from and how it is read; the pipeline, store, manifest and status are shared.
 */
export type BackupTarget = {
  readonly ref: ClusterRef;
  /** The cluster object, for Events about it. */
  readonly object: { apiVersion: string; kind: string; metadata: { name?: string; uid?: string } };
  /** The cluster's default store (`spec.backup.store`). */
  readonly defaultStore: BackupStoreSpec | undefined;
  /** Read fresh: where a snapshot may come from now, best first, or why none can. */
  sources(preference: 'prefer-replica' | 'master'): Promise<{ list: SnapshotSource[]; none: string }>;
  /** Opens a snapshot of one source; a SnapshotError when that source cannot serve (try another). */
  open(source: SnapshotSource, signal: AbortSignal): Promise<OpenedSnapshot>;
  /** A failure of the source mid-stream (lost, cut off, damaged) as a SnapshotError; else undefined. */
  sourceLost(error: unknown): SnapshotError | undefined;
};
