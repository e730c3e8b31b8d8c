import { createHash } from 'node:crypto';
import { IntegrityError } from '../../shared/backup/errors.ts';
import type { ObjectStore } from '../../shared/backup/object-store.ts';

/**
 * Passes every chunk on but the last, which waits until the source has ended without error —
 * for a stored object read through openStored, until its SHA-256 matched — and `beforeLast` is
 * done. A server replaces its data only once it has the whole RDB, so an object that fails its
 * checksum at the very end, or a run that ends before `beforeLast` recorded that the end is going
 * out, can never have touched the target's data.
 *
 * With `size` (the RDB's recorded length), no chunk that completes it goes out before the end
 * either: a source longer than that (an object changed since it was verified) would otherwise
 * hand a target told that length a whole RDB before its checksum fails, and the target would
 * load it. It fails with SizeMismatch instead, the target short of its end; so does a source
 * that ends short, before `beforeLast`.
 */
export async function* holdLast(
  source: AsyncIterable<Buffer>,
  beforeLast: () => Promise<void>,
  size?: number,
): AsyncGenerator<Buffer> {
  let held: Buffer | undefined;
  let released = 0;
  for await (const chunk of source) {
    if (held) {
      if (size !== undefined && released + held.length >= size)
        throw new IntegrityError(
          'SizeMismatch',
          `the RDB goes on past the ${size} bytes announced: not sending its end (the object changed after it was verified?)`,
        );
      released += held.length;
      yield held;
    }
    held = chunk;
  }
  if (!held) return;
  // Short of the announced size: the target will not take it, and nothing is said to be going out.
  if (size !== undefined && released + held.length !== size)
    throw new IntegrityError(
      'SizeMismatch',
      `the RDB has ${released + held.length} bytes, not the ${size} announced: not sending its end`,
    );
  await beforeLast();
  yield held;
}

/** Errors of a decompressor fed bytes that are not what it expects (zlib, zstd). */
export const isDecodeError = (error: unknown) =>
  /^(Z_|ZSTD_|ERR_ZLIB|ERR_ZSTD)/.test(String((error as { code?: unknown } | undefined)?.code ?? ''));

/**
 * SHA-256 and size of the stored bytes as they are, nothing decoded. Past `maxBytes` it stops
 * (an object grown in the store is not downloaded whole): the size then says more than that.
 */
export const hashStored = async (
  store: ObjectStore,
  key: string,
  signal?: AbortSignal,
  maxBytes = Infinity,
) => {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of (await store.download(key, signal)) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
    if (size > maxBytes) break;
  }
  return { sha256: hash.digest('hex'), size };
};
