import { Duplex, type Transform } from 'node:stream';
import { constants, createGunzip, createGzip, createZstdCompress, createZstdDecompress } from 'node:zlib';
import { own, release } from './buffers.ts';

export const COMPRESSIONS = ['zstd', 'gzip', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/**
 * Level 1, zstd's fastest: a backup must keep pace with the replication stream, and an RDB's
 * string values are already LZF-compressed by Redis, so higher levels gain little ratio. On the
 * 2-core bench machine level 1 streamed ~10% faster than level 3 (docs/backup.md).
 */
const ZSTD_LEVEL = 1;

/** The object key's suffix for a compression, after `.rdb`. */
export const compressionSuffix = (c: Compression) => ({ zstd: '.zst', gzip: '.gz', none: '' })[c];

/**
 * Output comes in pieces of up to this many bytes. zlib's default, 16 KiB, made four times as many
 * pieces as the input blocks, each a trip through every later stage: zstd then cost twice the CPU.
 * Decompressing, each piece is also a round trip to zlib's thread pool.
 */
const CHUNK = 256 * 1024;

/**
 * Runs a zlib stream as a stage that releases each input chunk once zlib has consumed it and
 * marks its output as the data path's own (./buffers.ts). One chunk is in zlib at a time; its
 * output waits while the next stage is behind, and then so does the input.
 */
const releasing = (inner: Transform): Duplex => {
  const outer = new Duplex({
    // Room for the next block's output while the stages after it work on this one: zlib runs
    // on its thread beside them instead of waiting for them.
    readableHighWaterMark: 1024 * 1024,
    write(chunk: Buffer, _e, callback) {
      inner.write(chunk, (error) => {
        if (!error) release(chunk);
        callback(error);
      });
    },
    final(callback) {
      inner.end();
      callback();
    },
    read() {
      inner.resume();
    },
    destroy(error, callback) {
      inner.destroy(error ?? undefined);
      callback(error);
    },
  });
  inner.on('data', (d: Buffer) => {
    if (!outer.push(own(d))) inner.pause();
  });
  inner.once('end', () => outer.push(null));
  inner.once('error', (e) => outer.destroy(e));
  return outer;
};

/** A stream that compresses, or undefined for none. zlib works on its thread pool, off the event loop. */
export const compressor = (c: Compression): Duplex | undefined => {
  if (c === 'zstd')
    return releasing(
      createZstdCompress({
        chunkSize: CHUNK,
        params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL, [constants.ZSTD_c_checksumFlag]: 1 },
      }),
    );
  if (c === 'gzip') return releasing(createGzip({ level: 6, chunkSize: CHUNK }));
  return undefined;
};

/** The reverse; its output in pieces of CHUNK too (each one a trip to zlib's thread and back). */
export const decompressor = (c: Compression): Transform | undefined => {
  if (c === 'zstd') return createZstdDecompress({ chunkSize: CHUNK });
  if (c === 'gzip') return createGunzip({ chunkSize: CHUNK });
  return undefined;
};
