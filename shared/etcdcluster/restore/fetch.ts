import { createWriteStream } from 'node:fs';
import { access, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { IntegrityError } from '../../backup/errors.ts';
import { openStored } from '../../backup/pipeline.ts';
import { type ResolvedStore, resolveStoreWith } from '../../backup/store-config.ts';
import { snapshotHashCheck } from '../../etcd/snapshot-verify.ts';
import type { RestoreSource } from './source.ts';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * A Secret mounted as files (`<dir>/<secret>/<key>`), as the first member's restore step sees the
 * store's credentials and the encryption key: a pod of an etcd member has no API access.
 */
export const mountedSecrets =
  (dir: string) =>
  async (name: string): Promise<Record<string, Buffer> | undefined> => {
    const at = join(dir, name);
    // An optional Secret volume whose Secret is missing holds no key (only kubelet's `..` entries).
    if (!(await exists(at)) || (await readdir(at)).every((f) => f.startsWith('..'))) return undefined;
    const read = async (key: string) => readFile(join(at, key)).catch(() => undefined);
    const keys = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'key'];
    return Object.fromEntries(
      (await Promise.all(keys.map(async (k) => [k, await read(k)] as const))).filter(
        ([, v]) => v !== undefined,
      ),
    ) as Record<string, Buffer>;
  };

/** The store of a restore source, with its Secrets as `readSecret` gives them. */
export const sourceStore = (
  source: RestoreSource,
  namespace: string,
  readSecret: (name: string) => Promise<Record<string, Buffer> | undefined>,
) =>
  resolveStoreWith({
    namespace,
    spec: { ...source.store, encryption: { secretName: source.encryptionSecret } },
    readSecret,
  });

/**
 * Downloads a backup into `out` as etcd's own snapshot file, checked three ways before it is
 * there: the stored object's SHA-256 and size (the Backup's record), every encrypted chunk
 * authenticated, and etcd's SHA-256 at the end of the snapshot. It is written to `<out>.part` and
 * renamed only when all held, so `etcdutl snapshot restore` never sees a partial or changed file.
 * Memory: the stages' buffers, whatever the size.
 */
export const fetchSnapshot = async (o: {
  source: RestoreSource;
  resolved: Pick<ResolvedStore, 'store' | 'encryption'>;
  out: string;
  signal?: AbortSignal;
}): Promise<{ dbSize: number }> => {
  const { source, resolved } = o;
  const part = `${o.out}.part`;
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _e, callback) {
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  try {
    await pipeline(
      await openStored({
        store: resolved.store,
        key: source.key,
        compression: source.compression,
        encryptionKey: resolved.encryption?.key,
        sha256: source.sha256,
        size: source.size,
        ...(o.signal ? { signal: o.signal } : {}),
      }),
      snapshotHashCheck(),
      count,
      createWriteStream(part),
      ...(o.signal ? [{ signal: o.signal }] : []),
    );
    if (bytes !== source.dbSize)
      throw new IntegrityError(
        'SizeMismatch',
        `${resolved.store.url(source.key)} holds a snapshot of ${bytes} bytes, not the ${source.dbSize} recorded`,
      );
    await rename(part, o.out);
    return { dbSize: bytes };
  } catch (error) {
    await rm(part, { force: true });
    throw error;
  }
};

/**
 * What the fetch step has to do, the member's volume first: data there with its WAL is a restore
 * done (nothing to fetch; etcdutl then refuses the non-empty dir and the pod is replaced without
 * the steps); data without its WAL is a restore cut short (etcdutl writes the database first and
 * the WAL last, made aside and renamed), whatever the emptyDir still holds; only then does a
 * snapshot fetched by an earlier run (it passed every check) spare a download.
 */
export const restoreStepOf = async (
  out: string,
  dataDir: string | undefined,
): Promise<'fetch' | 'fetched' | 'restored' | 'interrupted'> => {
  if (dataDir && (await exists(join(dataDir, 'member'))))
    return (await exists(join(dataDir, 'member', 'wal'))) ? 'restored' : 'interrupted';
  return (await exists(out)) ? 'fetched' : 'fetch';
};
