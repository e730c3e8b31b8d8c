import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EtcdSnapshotError } from './errors.ts';
import { SNAPSHOT_HASH_BYTES } from './snapshot-assembler.ts';

/**
 * A snapshot file as `etcdctl snapshot save` writes it (and as EtcdClient.snapshot() yields it):
 * the bbolt database, then the SHA-256 of the database. etcd's client tells one with a hash from
 * one without by its size: a database is whole pages, so size % 512 is 32 only when the hash is
 * there (client/v3/snapshot hasChecksum); etcdutl restore checks it the same way.
 */
export const hasSnapshotHash = (size: number): boolean => size % 512 === SNAPSHOT_HASH_BYTES;

/** Hashes all but the last 32 bytes seen, holding those back, whatever the chunking. Pure. */
export class TrailingHash {
  readonly #hash: Hash = createHash('sha256');
  #tail: Buffer = Buffer.alloc(0);
  #size = 0;

  update(chunk: Uint8Array) {
    this.#size += chunk.length;
    const joined = this.#tail.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.#tail, chunk]);
    const cut = Math.max(0, joined.length - SNAPSHOT_HASH_BYTES);
    if (cut > 0) this.#hash.update(joined.subarray(0, cut));
    // Copied so the caller's buffer is not held.
    this.#tail = Buffer.from(joined.subarray(cut));
  }

  /** Throws EtcdSnapshotError unless what was seen is a database followed by its SHA-256. */
  verify(): { size: number; dbSize: number } {
    if (!hasSnapshotHash(this.#size))
      throw new EtcdSnapshotError(
        'SnapshotChecksum',
        `snapshot of ${this.#size} bytes has no SHA-256 at its end (size % 512 is not 32)`,
      );
    if (!this.#hash.digest().equals(this.#tail))
      throw new EtcdSnapshotError(
        'SnapshotChecksum',
        'snapshot: its trailing SHA-256 does not match its data',
      );
    return { size: this.#size, dbSize: this.#size - SNAPSHOT_HASH_BYTES };
  }
}

/**
 * A pass-through that fails at its end unless the bytes were a snapshot with a matching hash:
 * put it in a pipeline (S3 → verify → disk) to refuse a damaged backup before using it.
 */
export const snapshotHashCheck = (): Transform => {
  const h = new TrailingHash();
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      h.update(chunk);
      cb(null, chunk);
    },
    flush(cb: TransformCallback) {
      try {
        h.verify();
        cb();
      } catch (error) {
        cb(error as Error);
      }
    },
  });
};

/** Checks a snapshot file's trailing SHA-256, streaming it: memory stays small whatever its size. */
export const verifySnapshotFile = async (
  path: string,
  o: { signal?: AbortSignal } = {},
): Promise<{ size: number; dbSize: number }> => {
  const h = new TrailingHash();
  await pipeline(
    createReadStream(path, { highWaterMark: 1024 * 1024 }),
    async (source) => {
      for await (const chunk of source) h.update(chunk as Buffer);
    },
    o.signal ? { signal: o.signal } : {},
  );
  return h.verify();
};
