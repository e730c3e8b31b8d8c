import { createHash } from 'node:crypto';
import { type Duplex, PassThrough, type Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { chunksHandedOver } from '../redis/snapshot.ts';
import { own, release } from './buffers.ts';
import { type Compression, compressor, decompressor } from './compression.ts';
import { decryptor, encryptor } from './encryption.ts';
import { IntegrityError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

export type Stored = {
  /** Bytes stored (after compression and encryption). */
  size: number;
  /** Bytes of the RDB file. */
  rdbSize: number;
  /** SHA-256 of the stored bytes, hex. */
  sha256: string;
  parts: number;
};

/** Counts (and optionally hashes) what passes, without holding any of it. */
const tap = (onChunk: (c: Buffer) => void) =>
  new Transform({
    transform(chunk: Buffer, _e, callback) {
      try {
        onChunk(chunk);
      } catch (error) {
        return callback(error as Error);
      }
      callback(null, chunk);
    },
  });

/**
 * Holds the stream to `bytesPerSecond` on average (the backup's bandwidth limit): a chunk that
 * comes early is passed on once the budget allows it. Backpressure does the rest.
 */
const throttle = (bytesPerSecond: number) => {
  const started = performance.now();
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _e, callback) {
      bytes += chunk.length;
      const early = (bytes / bytesPerSecond) * 1000 - (performance.now() - started);
      if (early > 1) setTimeout(() => callback(null, chunk), early);
      else callback(null, chunk);
    },
  });
};

const stages = (list: (Duplex | undefined)[]): Duplex[] => list.filter((t): t is Duplex => !!t);

/**
 * RDB stream → compression → optional encryption → SHA-256 → the store's multipart upload, all
 * streaming: memory is the stages' small buffers plus the upload's parts, whatever the size. A
 * failure anywhere stops every stage (the source connection is closed) and the upload is aborted.
 * The chunks of a snapshot stream (shared/redis/snapshot.ts) and what the stages make of them are
 * released as soon as they are used (./buffers.ts); a caller's own buffers are never touched.
 */
export const storeSnapshot = async (o: {
  rdb: Readable;
  store: ObjectStore;
  key: string;
  compression: Compression;
  encryptionKey?: Buffer | undefined;
  partSize: (index: number) => number;
  /** Told the RDB bytes read so far, on every chunk (throttle on the other side). */
  onProgress?: (rdbBytes: number) => void;
  /** Bandwidth limit for the RDB stream; unlimited when undefined. */
  maxBytesPerSecond?: number | undefined;
  signal?: AbortSignal;
}): Promise<Stored> => {
  let rdbSize = 0;
  let size = 0;
  const hash = createHash('sha256');
  let parts = 0;
  const handedOver = chunksHandedOver(o.rdb);
  const chain = stages([
    o.maxBytesPerSecond ? throttle(o.maxBytesPerSecond) : undefined,
    tap((c) => {
      if (handedOver) own(c);
      rdbSize += c.length;
      o.onProgress?.(rdbSize);
    }),
    compressor(o.compression),
    o.encryptionKey ? encryptor(o.encryptionKey) : undefined,
    // Chunks one by one, as made: reading a byte stream joins what it holds into a new buffer
    // (a copy, and the originals left to the garbage collector instead of released).
    new PassThrough({ objectMode: true, highWaterMark: 2 }),
  ]);
  /** What is stored, hashed and counted; each chunk released once the upload copied it. */
  const stored = async function* (source: AsyncIterable<Buffer>) {
    for await (const c of source) {
      size += c.length;
      hash.update(c);
      yield c;
      release(c);
    }
  };
  await (pipeline as (...args: unknown[]) => Promise<void>)(
    o.rdb,
    ...chain,
    async (source: AsyncIterable<Buffer>) => {
      const r = await o.store.upload(o.key, stored(source), {
        partSize: o.partSize,
        contentType: 'application/octet-stream',
        ...(o.signal ? { signal: o.signal } : {}),
      });
      parts = r.parts;
    },
    ...(o.signal ? [{ signal: o.signal }] : []),
  );
  return { size, rdbSize, sha256: hash.digest('hex'), parts };
};

/**
 * The reverse: the stored object → SHA-256 check → decryption → decompression → the RDB bytes.
 * Encrypted objects release only authenticated chunks; the checksum of the whole object is known
 * only at its end, so the stream errors there (IntegrityError) on a mismatch: a consumer must not
 * act on the data before the stream ended without error.
 */
export const openStored = async (o: {
  store: ObjectStore;
  key: string;
  compression: Compression;
  encryptionKey?: Buffer | undefined;
  sha256: string;
  size?: number;
  signal?: AbortSignal;
}): Promise<Readable> => {
  const body = await o.store.download(o.key, o.signal);
  const hash = createHash('sha256');
  let size = 0;
  const sizeMismatch = (what: string) =>
    new IntegrityError('SizeMismatch', `${o.store.url(o.key)} holds ${what} bytes, not the ${o.size} stored`);
  const verify = new Transform({
    transform(chunk: Buffer, _e, callback) {
      size += chunk.length;
      // A grown object fails here, not after the whole of it was downloaded (gigabytes, maybe).
      if (o.size !== undefined && size > o.size) return callback(sizeMismatch(`more than ${o.size}`));
      hash.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      const sha = hash.digest('hex');
      if (o.size !== undefined && size !== o.size) return callback(sizeMismatch(String(size)));
      if (sha !== o.sha256)
        return callback(
          new IntegrityError(
            'ChecksumMismatch',
            `${o.store.url(o.key)} has SHA-256 ${sha}, not ${o.sha256}: the object changed after it was stored`,
          ),
        );
      callback();
    },
  });
  // `out` ends only when the whole pipeline has, the checksum's flush included: a decompressor
  // may end its output before its input (gzip takes zero bytes after a member as padding, zstd
  // stops at a frame's end), and a consumer that saw the end then would act on data whose
  // checksum had not been checked yet — and the mismatch would arrive after the end, unheard.
  const out = new PassThrough();
  const sink = new Writable({
    write(chunk: Buffer, _e, callback) {
      if (out.write(chunk)) callback();
      else out.once('drain', () => callback());
    },
  });
  // A consumer that stops reading (destroys `out`) stops the download too.
  out.on('close', () => sink.destroy());
  (pipeline as (...args: unknown[]) => Promise<void>)(
    body,
    ...stages([
      verify,
      o.encryptionKey ? decryptor(o.encryptionKey) : undefined,
      decompressor(o.compression),
    ]),
    sink,
  ).then(
    () => out.end(),
    (error: Error) => out.destroy(error),
  );
  return out;
};
