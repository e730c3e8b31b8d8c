import { IntegrityError, StoreError } from '../../shared/backup/errors.ts';
import { openStored } from '../../shared/backup/pipeline.ts';
import { RestoreError } from './errors.ts';
import { RDB_HEADER_BYTES, type RdbFormat, rdbFormatOf } from './rdb-format.ts';
import type { Resolved } from './source.ts';
import { hashStored, isDecodeError } from './stream.ts';

/** The stored object read as a load will read it: SHA-256, decryption, decompression. */
export const openSource = ({ source, store }: Resolved, signal?: AbortSignal) =>
  openStored({
    store: store.store,
    key: source.key,
    compression: source.compression,
    encryptionKey: store.encryption?.key,
    sha256: source.sha256,
    size: source.size,
    ...(signal ? { signal } : {}),
  });

/** ChecksumMismatch when the stored bytes, hashed as they are, are not the ones recorded; `why` says what showed it. */
const changedObject = async (
  { source, store }: Resolved,
  why: string,
  signal?: AbortSignal,
): Promise<IntegrityError | undefined> => {
  const raw = await hashStored(store.store, source.key, signal, source.size);
  if (raw.sha256 === source.sha256 && raw.size === source.size) return undefined;
  return new IntegrityError(
    'ChecksumMismatch',
    `${store.store.url(source.key)} has SHA-256 ${raw.sha256} (${raw.size} bytes), not ${source.sha256} (${source.size} bytes): the object changed after it was stored (${why})`,
  );
};

/**
 * A target that dropped the transfer may have refused what it was sent — a master parsing from
 * the socket drops a stream whose RDB ends before the EOF mark — and which of the two shows
 * first, the drop or the checksum at the object's end, is a race. So before the load is called
 * lost (and tried again), the stored object is hashed: a changed one fails as such, for good.
 * Not when the whole object went out (`delivered`: its checksum had matched). A store that does
 * not answer leaves the error as it was; a run told to stop stops.
 */
export const transferFailure = async (
  resolved: Resolved,
  error: unknown,
  o: { delivered: boolean; signal?: AbortSignal },
) => {
  if (o.delivered || (error as { reason?: unknown } | undefined)?.reason !== 'TargetLost') return error;
  try {
    return (await changedObject(resolved, (error as Error).message, o.signal)) ?? error;
  } catch (hashFailed) {
    if (o.signal?.aborted) throw hashFailed;
    return error;
  }
};

/**
 * What a failed read of the stored object means, as the error to end with. A chunk that does not
 * decrypt or decompress is told apart by hashing the raw bytes: the object changed after it was
 * stored (ChecksumMismatch) or was stored that way (CorruptObject); neither passes on a retry. A
 * store or network failure may (SourceFailed, retry).
 */
export const readFailure = async (
  resolved: Resolved,
  error: unknown,
  signal?: AbortSignal,
): Promise<Error> => {
  const { source, store } = resolved;
  const url = store.store.url(source.key);
  if (error instanceof StoreError || error instanceof RestoreError) return error;
  if (error instanceof IntegrityError && /^(ChecksumMismatch|SizeMismatch)$/.test(error.reason)) return error;
  if (!(error instanceof IntegrityError) && !isDecodeError(error))
    return new RestoreError('SourceFailed', `reading ${url}: ${(error as Error).message}`, true, {
      cause: error,
    });
  const changed = await changedObject(resolved, (error as Error).message, signal);
  if (changed) return changed;
  if (error instanceof IntegrityError) return error;
  return new RestoreError(
    'CorruptObject',
    `${url} is the object that was stored, but it does not decompress as ${source.compression}: ${(error as Error).message}`,
    false,
    { cause: error },
  );
};

/** The stored object's RDB for a load: a read that fails ends with readFailure's error. */
export async function* readSource(resolved: Resolved, signal?: AbortSignal): AsyncGenerator<Buffer> {
  try {
    yield* (await openSource(resolved, signal)) as AsyncIterable<Buffer>;
  } catch (error) {
    throw await readFailure(resolved, error, signal);
  }
}

/**
 * Reads the whole object once before any data is touched: its SHA-256 and size must be the
 * recorded ones, it must decrypt (every chunk authenticated) and decompress to an RDB of the
 * recorded size. A changed object is reported as such (ChecksumMismatch) even when its change
 * first shows as a chunk that does not decrypt or decompress: then the raw bytes are hashed too.
 * Memory: the stages' buffers, whatever the size.
 */
export const verifySource = async (
  resolved: Resolved,
  o: {
    signal?: AbortSignal;
    onProgress?: (rdbBytes: number) => void;
    /**
     * Only as far as the RDB header (`verifyFirst: false`): the format is checked now, the rest
     * while the load streams — holdLast keeps its end from the master until the SHA-256 matched.
     */
    headOnly?: boolean;
  },
): Promise<{ format: RdbFormat; rdbBytes: number }> => {
  const { source, store } = resolved;
  const url = store.store.url(source.key);
  let head = Buffer.alloc(0);
  let rdbBytes = 0;
  // A read that fails ends with readFailure's error, as a load's does.
  for await (const chunk of readSource(resolved, o.signal)) {
    if (head.length < RDB_HEADER_BYTES)
      head = Buffer.concat([head, chunk.subarray(0, RDB_HEADER_BYTES - head.length)]);
    rdbBytes += chunk.length;
    o.onProgress?.(rdbBytes);
    // Leaving the loop destroys the stream: the rest of the object is not downloaded.
    if (o.headOnly && head.length >= RDB_HEADER_BYTES) break;
  }
  if (!o.headOnly && rdbBytes !== source.rdbSize)
    throw new IntegrityError(
      'SizeMismatch',
      `${url} holds an RDB of ${rdbBytes} bytes, not the ${source.rdbSize} recorded in its manifest`,
    );
  const format = rdbFormatOf(head);
  if (!format)
    throw new RestoreError(
      'NotAnRdb',
      `${url} does not hold an RDB file (it starts with ${JSON.stringify(head.toString('latin1'))}, not REDIS or VALKEY and a version)`,
      false,
    );
  return { format, rdbBytes };
};
