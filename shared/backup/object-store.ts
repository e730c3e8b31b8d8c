import type { Readable } from 'node:stream';

/**
 * Where backups are kept: an S3 bucket (shared/s3) or anything that can do the same. Every
 * method throws a StoreError (shared/backup/errors.ts) that says whether retrying can help.
 */
export type ObjectStore = {
  /** How to name a key to a user: `s3://bucket/key`. */
  url(key: string): string;
  /**
   * Streams `body` to `key` in parts; the object exists only once this resolves. On any failure
   * (the body's or the store's) the partial upload is aborted before it rejects, so no parts are
   * left behind. Memory: (concurrency + 1) parts. A chunk of `body` is the store's to read only
   * until it asks for the next one: the data path releases its memory then
   * (shared/backup/buffers.ts), so a store copies what it keeps.
   */
  upload(
    key: string,
    body: AsyncIterable<Buffer>,
    o: { partSize: (index: number) => number; contentType: string; signal?: AbortSignal },
  ): Promise<{ size: number; parts: number }>;
  /** A small object in one request (a manifest). */
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** A small object, or undefined when there is none. */
  get(key: string, maxBytes: number): Promise<Buffer | undefined>;
  /** The object's bytes as a stream. */
  download(key: string, signal?: AbortSignal): Promise<Readable>;
  /** Its size, or undefined when there is none. */
  head(key: string): Promise<{ size: number } | undefined>;
  /** Deletes it; a missing object is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Aborts every unfinished multipart upload of `key` (that very key, never a longer one under
   * it): what a crashed process, or one that could not reach the store to abort, left behind.
   * Returns how many it aborted. Also the cheap check that the bucket exists and the credentials
   * work.
   */
  abortUnfinished(key: string): Promise<number>;
  /** Unfinished multipart uploads under `prefix` (keys), for checks. */
  unfinished(prefix: string): Promise<string[]>;
};
