import { BackupSpecDefaults } from '../../shared/api/generated.ts';
import { ENCRYPTION_FORMAT } from '../../shared/backup/encryption.ts';
import { ConfigurationError } from '../../shared/backup/errors.ts';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import { backupKeys, type Manifest } from '../../shared/backup/manifest.ts';
import { type Stored, storeSnapshot } from '../../shared/backup/pipeline.ts';
import type { SourcePreference } from '../../shared/backup/sources.ts';
import type { BackupStoreSpec, ResolvedStore } from '../../shared/backup/store-config.ts';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { SnapshotError } from '../../shared/redis/snapshot.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { partSizes } from '../../shared/s3/part-size.ts';
import type { BackupTarget, OpenedSnapshot, SnapshotSource } from './targets/types.ts';

/** Sources tried in one attempt before it gives up (and the attempt is retried later). */
const MAX_SOURCES_PER_ATTEMPT = 4;
/** How long a running attempt waits for its cluster's lock to choose another source. */
const LOCK_WAIT_MS = 30_000;
const PROGRESS_EVERY_MS = 1000;

export type Taken = Stored & {
  source: SnapshotSource;
  keys: ReturnType<typeof backupKeys>;
  location: string;
  manifest: Manifest;
};

/** The store a Backup writes to: its own, or its cluster's default. */
export const storeSpecOf = (loaded: LoadedBackup, target: BackupTarget): BackupStoreSpec => {
  // The cluster's default store may change between attempts; an attempt that started recorded
  // where it wrote, and every later attempt (and the finalizer) keeps to that place, so nothing
  // it stored is left where no one looks.
  const spec =
    loaded.backup.spec.store ??
    (loaded.backup.status?.store as BackupStoreSpec | undefined) ??
    target.defaultStore;
  if (!spec)
    throw new ConfigurationError(
      'NoStore',
      `no store to write to: set spec.store on this Backup, or spec.backup.store on ${target.ref.kind} ${target.ref.name}`,
    );
  return spec;
};

export const keysOf = (loaded: LoadedBackup, spec: BackupStoreSpec) =>
  backupKeys({
    prefix: spec.s3.prefix ?? '',
    namespace: loaded.key.namespace,
    cluster: loaded.backup.spec.cluster.name,
    backup: loaded.key.name,
    uid: loaded.backup.metadata.uid ?? '',
    compression: spec.compression ?? BackupSpecDefaults.store.compression,
    encrypted: !!spec.encryption?.secretName,
    kind: loaded.backup.spec.cluster.kind,
  });

/** The first source could not be chosen: another run (reconcile, health, a restore) holds the cluster. */
export class ClusterBusyError extends Error {
  override readonly name = 'ClusterBusyError';
  readonly retry = true;
  readonly reason = 'ClusterBusy';
}

/** The Backup was deleted while its attempt ran: the attempt stops, nothing is retried. */
export class BackupDeletedError extends Error {
  override readonly name = 'BackupDeletedError';
  readonly retry = false;
  readonly reason = 'Deleted';
  constructor() {
    super('the Backup was deleted while it ran');
  }
}

/**
 * Opens a snapshot with the time its data is from: when it was asked for (Redis forks on SYNC),
 * not when it opened — a disk-based transfer opens only after the whole BGSAVE.
 */
export const openTimed = async (
  target: Pick<BackupTarget, 'open'>,
  source: SnapshotSource,
  signal: AbortSignal,
  clock: () => Date,
): Promise<{ snap: OpenedSnapshot; takenAt: Date }> => {
  const takenAt = clock();
  return { snap: await target.open(source, signal), takenAt };
};

/**
 * One attempt: a snapshot of the best source streamed into the store, then its manifest. Sources
 * are chosen and their snapshots opened under the cluster's lock, so the choice never interleaves
 * with a failover or a rollout, and the data is fixed there (the source has forked once its
 * header arrives); the stream itself runs without it, so health and reconcile go on beside a
 * backup of any length. A source lost mid-stream (failover, pod deleted) is dropped and the next
 * one is chosen the same way; the upload of the lost one was aborted. `onStart` is called once,
 * under the lock, before anything is stored: the attempt starts there.
 */
export const takeBackup = async (o: {
  ctx: HandlerContext;
  loaded: LoadedBackup;
  target: BackupTarget;
  spec: BackupStoreSpec;
  resolved: ResolvedStore;
  started: Date;
  onStart: () => Promise<void>;
  /** Called when a source starts streaming, and with progress (throttled). */
  onSource: (source: SnapshotSource) => Promise<void>;
  onProgress: (bytes: number, total: number | undefined) => Promise<void>;
  onSourceLost: (source: SnapshotSource, error: SnapshotError) => Promise<void>;
  /** Stops the attempt besides the run's own signal (the Backup being deleted). */
  signal?: AbortSignal;
}): Promise<Taken> => {
  const { ctx, loaded, target, resolved } = o;
  const signal = o.signal ? AbortSignal.any([ctx.signal, o.signal]) : ctx.signal;
  const { kind, name } = target.ref;
  const keys = keysOf(loaded, o.spec);
  const preference = (loaded.backup.spec.source ?? BackupSpecDefaults.source) as SourcePreference;
  const clusterKey = objectKeyOf({ kind, namespace: loaded.key.namespace, name });
  const maxRate = Number(ctx.env.TIDEWAY_BACKUP_MAX_BYTES_PER_SECOND ?? '') || undefined;

  const tried = new Set<string>();
  let lastError: SnapshotError | undefined;
  /** Under the cluster's lock: the next source not tried yet, with its snapshot open. */
  const openNext = () =>
    ctx.withLock(clusterKey, { waitMs: tried.size === 0 ? 0 : LOCK_WAIT_MS }, async () => {
      for (const source of (await target.sources(preference)).list) {
        if (tried.has(source.pod) || tried.size >= MAX_SOURCES_PER_ATTEMPT) continue;
        if (tried.size === 0) await o.onStart();
        tried.add(source.pod);
        ctx.fence();
        await o.onSource(source);
        try {
          // The run's signal, not the lock's: the stream outlives this lock.
          return { source, ...(await openTimed(target, source, signal, ctx.clock)) };
        } catch (error) {
          const lost = target.sourceLost(error);
          if (!lost || signal.aborted) throw error;
          lastError = lost;
          await o.onSourceLost(source, lost);
        }
      }
      return undefined;
    });

  // This Backup's runs are serialized by its lock: an upload of its key that is still open is left
  // over (a crash, an abort that could not reach the store). Also the first request, so a missing
  // bucket or wrong credentials fail before any snapshot is taken; and outside the cluster's lock,
  // which a store that is slow to answer must never hold (health's failovers wait for it).
  try {
    await resolved.store.abortUnfinished(keys.object);
  } catch (error) {
    // A store that fails here fails the attempt: counted, so a store that stays down ends the
    // Backup after its attempts, with the store's own reason.
    await o.onStart();
    throw error;
  }
  for (;;) {
    const next = await openNext();
    if (!next) {
      const message = `${kind} ${name} is busy (a reconcile, a failover or a restore holds its lock)`;
      if (tried.size === 0) throw new ClusterBusyError(message);
      throw new SnapshotError(
        'ClusterBusy',
        `${message}; no other source could be chosen within ${LOCK_WAIT_MS / 1000}s`,
      );
    }
    if (!next.value)
      throw lastError ?? new SnapshotError('NoSource', `no instance of ${kind} ${name} can serve a snapshot`);
    const { source, snap, takenAt } = next.value;
    let lastWrite = 0;
    let writing: Promise<void> | undefined;
    try {
      const total = snap.total;
      const stored = await storeSnapshot({
        rdb: snap.data,
        store: resolved.store,
        key: keys.object,
        compression: resolved.compression,
        encryptionKey: resolved.encryption?.key,
        partSize: partSizes(total),
        maxBytesPerSecond: maxRate,
        signal,
        onProgress: (bytes) => {
          const now = performance.now();
          if (writing || now - lastWrite < PROGRESS_EVERY_MS) return;
          lastWrite = now;
          writing = o
            .onProgress(bytes, total)
            .catch((error: unknown) => ctx.log.warn('progress not written', { error }))
            .finally(() => {
              writing = undefined;
            });
        },
      });
      await writing;
      const completed = new Date();
      const manifest: Manifest = {
        format: 'tideway.dev/backup-manifest/v1',
        backup: {
          namespace: loaded.key.namespace,
          name: loaded.key.name,
          uid: loaded.backup.metadata.uid ?? '',
        },
        cluster: {
          namespace: loaded.key.namespace,
          name,
          ...(target.object.metadata.uid ? { uid: target.object.metadata.uid } : {}),
          kind,
        },
        ...(kind === 'EtcdCluster'
          ? { etcd: { version: source.version } }
          : {
              redis: {
                product: source.product,
                version: source.version,
                ...(source.usedMemory === undefined ? {} : { usedMemory: source.usedMemory }),
                ...(source.maxmemoryUsage === undefined ? {} : { maxmemoryUsage: source.maxmemoryUsage }),
                ...(source.maxmemory === undefined ? {} : { maxmemory: source.maxmemory }),
              },
            }),
        source: source.pod,
        object: keys.object,
        size: stored.size,
        rdbSize: stored.rdbSize,
        sha256: stored.sha256,
        compression: resolved.compression,
        encryption: resolved.encryption
          ? { format: ENCRYPTION_FORMAT, secretName: resolved.encryption.secretName }
          : null,
        startedAt: o.started.toISOString(),
        takenAt: takenAt.toISOString(),
        created: completed.toISOString(),
      };
      await resolved.store.put(
        keys.manifest,
        Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`),
        'application/json',
      );
      return { ...stored, source, keys, location: resolved.store.url(keys.object), manifest };
    } catch (error) {
      await writing;
      const lost = target.sourceLost(error);
      if (!lost || signal.aborted) throw error;
      lastError = lost;
      await o.onSourceLost(source, lost);
    }
  }
};
