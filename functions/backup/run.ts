import type { RedisCluster } from '../../shared/api/generated.ts';
import { ENCRYPTION_FORMAT } from '../../shared/backup/encryption.ts';
import { ConfigurationError } from '../../shared/backup/errors.ts';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import { backupKeys, clusterPrefix, type Manifest } from '../../shared/backup/manifest.ts';
import { type Stored, storeSnapshot } from '../../shared/backup/pipeline.ts';
import { backupSources, type SourcePreference } from '../../shared/backup/sources.ts';
import type { BackupStoreSpec, ResolvedStore } from '../../shared/backup/store-config.ts';
import { openSnapshot, SnapshotError } from '../../shared/redis/snapshot.ts';
import { listPods } from '../../shared/rediscluster/kube.ts';
import { REDIS_PORT } from '../../shared/rediscluster/names.ts';
import { type Instance, probeInstances } from '../../shared/rediscluster/probe.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { partSizes } from '../../shared/s3/part-size.ts';

/** Sources tried in one attempt before it gives up (and the attempt is retried later). */
const MAX_SOURCES_PER_ATTEMPT = 4;
const PROGRESS_EVERY_MS = 1000;

export type Taken = Stored & {
  source: Instance;
  keys: ReturnType<typeof backupKeys>;
  location: string;
  manifest: Manifest;
};

/** The store a Backup writes to: its own, or its cluster's default. */
export const storeSpecOf = (loaded: LoadedBackup, rc: RedisCluster): BackupStoreSpec => {
  const spec = loaded.backup.spec.store ?? rc.spec.backup?.store;
  if (!spec)
    throw new ConfigurationError(
      'NoStore',
      `no store to write to: set spec.store on this Backup, or spec.backup.store on RedisCluster ${rc.metadata.name}`,
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
    compression: spec.compression ?? 'zstd',
    encrypted: !!spec.encryption?.secretName,
  });

/**
 * One attempt: a snapshot of the best source streamed into the store, then its manifest. A source
 * lost mid-stream (failover, pod deleted) is dropped and the next one is tried, after a fresh look
 * at the cluster when the list runs out; the upload of the lost one was aborted. `sources` are
 * the ones found when the attempt was decided, `started` when it began.
 */
export const takeBackup = async (o: {
  ctx: HandlerContext;
  loaded: LoadedBackup;
  rc: RedisCluster;
  /** The cluster's passwords; each instance says which one it took (Instance.password). */
  passwords: readonly string[];
  sources: Instance[];
  spec: BackupStoreSpec;
  resolved: ResolvedStore;
  started: Date;
  /** Called when a source starts streaming, and with progress (throttled). */
  onSource: (source: Instance) => Promise<void>;
  onProgress: (bytes: number, total: number | undefined) => Promise<void>;
  onSourceLost: (source: Instance, error: SnapshotError) => Promise<void>;
}): Promise<Taken> => {
  const { ctx, loaded, rc, resolved } = o;
  const keys = keysOf(loaded, o.spec);
  const preference = (loaded.backup.spec.source ?? 'prefer-replica') as SourcePreference;
  // Under the cluster's lock no other backup of this cluster runs: anything unfinished under its
  // prefix is left over (a crash, an abort that could not reach the store). Also the first
  // request, so a missing bucket or wrong credentials fail here, before any snapshot is taken.
  await resolved.store.abortUnfinished(
    clusterPrefix(resolved.prefix, loaded.key.namespace, rc.metadata.name),
  );
  const maxRate = Number(ctx.env.TIDEWAY_BACKUP_MAX_BYTES_PER_SECOND ?? '') || undefined;

  const tried = new Set<string>();
  let queue = o.sources;
  let lastError: SnapshotError | undefined;
  while (tried.size < MAX_SOURCES_PER_ATTEMPT) {
    const source = queue.find((i) => !tried.has(i.pod));
    if (!source) {
      if (queue !== o.sources || !lastError) break;
      // Every source found at first was lost: the cluster may have moved on (a new pod, a failover).
      const pods = await listPods(ctx.kube, rc);
      queue = backupSources(await probeInstances(rc.metadata.name, pods, o.passwords), {
        source: preference,
        master: rc.status?.master,
      });
      continue;
    }
    tried.add(source.pod);
    ctx.fence();
    await o.onSource(source);
    let lastWrite = 0;
    let writing: Promise<void> | undefined;
    try {
      const snap = await openSnapshot({
        host: source.ip ?? '',
        port: REDIS_PORT,
        password: o.passwords[source.password ?? 0] ?? '',
        signal: ctx.signal,
      });
      const total = snap.header.size;
      const stored = await storeSnapshot({
        rdb: snap.rdb,
        store: resolved.store,
        key: keys.object,
        compression: resolved.compression,
        encryptionKey: resolved.encryption?.key,
        partSize: partSizes(total),
        maxBytesPerSecond: maxRate,
        signal: ctx.signal,
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
          name: rc.metadata.name,
          ...(rc.metadata.uid ? { uid: rc.metadata.uid } : {}),
        },
        redis: { product: source.product ?? 'redis', version: source.version ?? 'unknown' },
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
      if (!(error instanceof SnapshotError) || ctx.signal.aborted) throw error;
      lastError = error;
      await o.onSourceLost(source, error);
    }
  }
  throw (
    lastError ??
    new SnapshotError('NoSource', `no instance of RedisCluster ${rc.metadata.name} can serve a snapshot`)
  );
};
