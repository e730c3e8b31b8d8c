import { StoreError } from '../backup/errors.ts';
import { S3_LIMITS } from './part-size.ts';

/** A part as the completion names it: its number, ETag and the checksum the server checked. */
export type UploadedPart = { PartNumber: number; ETag: string; ChecksumCRC32?: string };

/** The four requests of a multipart upload; S3 in production, a recorder in unit tests. */
export type MultipartApi = {
  create(key: string, contentType: string): Promise<string>;
  uploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: Buffer,
    signal?: AbortSignal,
  ): Promise<UploadedPart>;
  complete(key: string, uploadId: string, parts: UploadedPart[]): Promise<void>;
  abort(key: string, uploadId: string): Promise<void>;
};

export type MultipartOptions = {
  partSize: (index: number) => number;
  contentType: string;
  /** Parts uploading at once while the next one fills. */
  concurrency?: number;
  signal?: AbortSignal;
  /** Told when an abort after a failure did not go through (the parts stay until cleaned up). */
  onAbortFailed?: (error: unknown) => void;
};

/**
 * Streams `body` into a multipart upload: each part is filled into a buffer of its own (one copy,
 * never the whole object), up to `concurrency` parts upload while the next fills. Memory:
 * (concurrency + 1) part buffers, reused. Any failure — of the body, a part, the completion, or
 * the signal — aborts the upload before the error is rethrown, so nothing of it remains; an abort
 * that fails itself (the store unreachable) is reported and left to abortUnfinished.
 */
export const multipartUpload = async (
  api: MultipartApi,
  key: string,
  body: AsyncIterable<Buffer>,
  o: MultipartOptions,
): Promise<{ size: number; parts: number }> => {
  const concurrency = o.concurrency ?? 2;
  const uploadId = await api.create(key, o.contentType);
  const etags: UploadedPart[] = [];
  const running = new Set<Promise<void>>();
  const free: Buffer[] = [];
  let failure: unknown;
  let size = 0;
  let index = 0;

  const bufferFor = (n: number) => {
    const i = free.findIndex((b) => b.length === n);
    return i >= 0 ? (free.splice(i, 1)[0] as Buffer) : Buffer.allocUnsafe(n);
  };
  const send = async (buf: Buffer, length: number) => {
    if (index >= S3_LIMITS.maxParts)
      throw new StoreError('TooManyParts', `the upload needs more than ${S3_LIMITS.maxParts} parts`, false);
    const partNumber = ++index;
    while (running.size >= concurrency) await Promise.race(running);
    if (failure) throw failure;
    const p = api
      .uploadPart(key, uploadId, partNumber, buf.subarray(0, length), o.signal)
      .then((part) => {
        etags.push(part);
        free.push(buf);
      })
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => running.delete(p));
    running.add(p);
  };

  try {
    let buf = bufferFor(o.partSize(0));
    let filled = 0;
    for await (const chunk of body) {
      o.signal?.throwIfAborted();
      if (failure) throw failure;
      let at = 0;
      while (at < chunk.length) {
        const n = Math.min(chunk.length - at, buf.length - filled);
        chunk.copy(buf, filled, at, at + n);
        filled += n;
        at += n;
        size += n;
        if (filled === buf.length) {
          await send(buf, filled);
          buf = bufferFor(o.partSize(index));
          filled = 0;
        }
      }
    }
    // The last part may be short; an empty body is one empty part.
    if (filled > 0 || index === 0) await send(buf, filled);
    await Promise.all(running);
    if (failure) throw failure;
    o.signal?.throwIfAborted();
    etags.sort((a, b) => a.PartNumber - b.PartNumber);
    await api.complete(key, uploadId, etags);
    return { size, parts: etags.length };
  } catch (error) {
    failure ??= error;
    await Promise.all(running);
    try {
      await api.abort(key, uploadId);
    } catch (abortError) {
      o.onAbortFailed?.(abortError);
    }
    throw error;
  }
};
