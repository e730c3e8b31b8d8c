import type { Transform } from 'node:stream';
import { constants, createGunzip, createGzip, createZstdCompress, createZstdDecompress } from 'node:zlib';

export const COMPRESSIONS = ['zstd', 'gzip', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/** Level 3 is zstd's default: the best ratio that still keeps pace with a replication stream. */
const ZSTD_LEVEL = 3;

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
