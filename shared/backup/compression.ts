import type { Transform } from 'node:stream';
import { constants, createGunzip, createGzip, createZstdCompress, createZstdDecompress } from 'node:zlib';

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

/** A stream that compresses, or undefined for none. zlib works on its thread pool, off the event loop. */
export const compressor = (c: Compression): Transform | undefined => {
  if (c === 'zstd')
    return createZstdCompress({
      params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL, [constants.ZSTD_c_checksumFlag]: 1 },
    });
  if (c === 'gzip') return createGzip({ level: 6 });
  return undefined;
};

export const decompressor = (c: Compression): Transform | undefined => {
  if (c === 'zstd') return createZstdDecompress();
  if (c === 'gzip') return createGunzip();
  return undefined;
};
