import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { StoreError } from '../backup/errors.ts';
import type { ObjectStore } from '../backup/object-store.ts';
import { classifyS3Error, type S3ErrorContext } from './errors.ts';
import { S3ServiceError, s3Http } from './http.ts';
import { type MultipartApi, multipartUpload } from './multipart.ts';
import { blocks, errorOf, escapeXml, tag } from './xml.ts';

export type S3StoreConfig = {
  bucket: string;
  region: string;
  /** Empty for AWS. */
  endpoint?: string;
  forcePathStyle?: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Names the Secret in error messages; the credentials themselves never appear in one. */
  credentialsName: string;
  serverSideEncryption?: '' | 'AES256' | 'aws:kms';
  /** Requests per call, with back-off in between (transient failures only). */
  maxAttempts?: number;
  /** Parts uploading at once. */
  concurrency?: number;
  /** Told when an abort failed and parts stay behind until abortUnfinished. */
  onAbortFailed?: (key: string, error: unknown) => void;
};

/** CRC-32 of a part, as S3's `x-amz-checksum-crc32` wants it: big-endian, base64. zlib's is native. */
export const crc32Base64 = (b: Buffer): string => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(b));
  return out.toString('base64');
};

/**
 * An S3 bucket (AWS or any S3-compatible server) as an ObjectStore, over S3's REST API (./http.ts).
 *
 * Parts of an upload are protected by a CRC-32 the server checks (`x-amz-checksum-crc32`; the
 * upload is created with that algorithm, as S3 asks, and the completion names each part's), and
 * signed with UNSIGNED-PAYLOAD: the signature covers the checksum header, not a SHA-256 of the
 * body, so neither side hashes each part twice more. A part changed on the way is refused by the
 * server (BadDigest); the object as a whole is checked against the backup's SHA-256 on the way
 * back (shared/backup/pipeline.ts openStored).
 */
export const s3Store = (c: S3StoreConfig): ObjectStore => {
  const http = s3Http({
    bucket: c.bucket,
    region: c.region,
    endpoint: c.endpoint,
    forcePathStyle: c.forcePathStyle ?? false,
    credentials: c.credentials,
    maxAttempts: c.maxAttempts ?? 4,
    connectTimeoutMs: 5000,
    requestTimeoutMs: 120_000,
  });
  const ctx: S3ErrorContext = {
    bucket: c.bucket,
    endpoint: c.endpoint || `AWS S3 (${c.region})`,
    credentials: c.credentialsName,
  };
  const sse: Record<string, string> = c.serverSideEncryption
    ? { 'x-amz-server-side-encryption': c.serverSideEncryption }
    : {};
  /** One request, its failure classified. */
  const send = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw classifyS3Error(error, ctx, what);
    }
  };
  const missing = (error: unknown) => error instanceof S3ServiceError && error.status === 404;

  const api: MultipartApi = {
    create: async (key, contentType) => {
      const r = await send(`starting the upload of ${key}`, () =>
        http.send({
          method: 'POST',
          key,
          query: { uploads: '' },
          headers: { 'content-type': contentType, 'x-amz-checksum-algorithm': 'CRC32', ...sse },
        }),
      );
      const id = tag(r.body.toString('utf8'), 'UploadId');
      if (!id) throw new StoreError('StoreRejected', `no upload id for ${key}`, true);
      return id;
    },
    uploadPart: async (key, uploadId, PartNumber, body, signal) => {
      const ChecksumCRC32 = crc32Base64(body);
      const r = await send(`uploading part ${PartNumber} of ${key}`, () =>
        http.send({
          method: 'PUT',
          key,
          query: { partNumber: String(PartNumber), uploadId },
          headers: { 'x-amz-checksum-crc32': ChecksumCRC32 },
          body,
          unsignedPayload: true,
          signal,
        }),
      );
      const ETag = r.headers.etag;
      if (!ETag) throw new StoreError('StoreRejected', `no ETag for part ${PartNumber} of ${key}`, true);
      return { PartNumber, ETag, ChecksumCRC32 };
    },
    complete: async (key, uploadId, parts) => {
      const xml = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts
        .map(
          (p) =>
            `<Part><PartNumber>${p.PartNumber}</PartNumber><ETag>${escapeXml(p.ETag)}</ETag>${
              p.ChecksumCRC32 ? `<ChecksumCRC32>${p.ChecksumCRC32}</ChecksumCRC32>` : ''
            }</Part>`,
        )
        .join('')}</CompleteMultipartUpload>`;
      await send(`completing the upload of ${key}`, async () => {
        const r = await http.send({
          method: 'POST',
          key,
          query: { uploadId },
          headers: { 'content-type': 'application/xml' },
          body: Buffer.from(xml),
        });
        // S3 may answer 200 and put the failure in the body.
        const e = errorOf(r.body.toString('utf8'));
        if (e) throw new S3ServiceError(e.code, 500, e.message);
      });
    },
    abort: async (key, uploadId) => {
      await send(`aborting the upload of ${key}`, () =>
        http.send({ method: 'DELETE', key, query: { uploadId } }),
      );
    },
  };

  const listUnfinished = async (prefix: string) => {
    const found: { key: string; uploadId: string }[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const r = await send(`listing unfinished uploads under ${prefix}`, () =>
        http.send({
          method: 'GET',
          query: {
            uploads: '',
            prefix,
            ...(keyMarker ? { 'key-marker': keyMarker } : {}),
            ...(uploadIdMarker ? { 'upload-id-marker': uploadIdMarker } : {}),
          },
        }),
      );
      const xml = r.body.toString('utf8');
      for (const u of blocks(xml, 'Upload')) {
        const key = tag(u, 'Key');
        const uploadId = tag(u, 'UploadId');
        if (key && uploadId) found.push({ key, uploadId });
      }
      keyMarker = tag(xml, 'NextKeyMarker');
      uploadIdMarker = tag(xml, 'NextUploadIdMarker');
      if (tag(xml, 'IsTruncated') !== 'true' || (!keyMarker && !uploadIdMarker)) return found;
    }
  };

  return {
    url: (key) => `s3://${c.bucket}/${key}`,
    upload: (key, body, o) =>
      multipartUpload(api, key, body, {
        ...o,
        concurrency: c.concurrency ?? 2,
        onAbortFailed: (error) => c.onAbortFailed?.(key, error),
      }),
    put: async (key, body, contentType) => {
      await send(`writing ${key}`, () =>
        http.send({ method: 'PUT', key, headers: { 'content-type': contentType, ...sse }, body }),
      );
    },
    get: async (key, maxBytes) => {
      try {
        const r = await http.send({ method: 'GET', key });
        if (r.body.length > maxBytes)
          throw new StoreError('ObjectTooLarge', `${key} is larger than ${maxBytes} bytes`, false);
        return r.body;
      } catch (error) {
        const e = classifyS3Error(error, ctx, `reading ${key}`);
        if (e.reason === 'ObjectNotFound') return undefined;
        throw e;
      }
    },
    download: (key, signal) =>
      send(`downloading ${key}`, () => http.stream({ method: 'GET', key, signal })) as Promise<Readable>,
    head: async (key) => {
      try {
        const r = await http.send({ method: 'HEAD', key });
        return { size: Number(r.headers['content-length'] ?? 0) };
      } catch (error) {
        // HEAD has no body: a missing object is a bare 404.
        if (missing(error)) return undefined;
        throw classifyS3Error(error, ctx, `looking up ${key}`);
      }
    },
    delete: async (key) => {
      await send(`deleting ${key}`, () => http.send({ method: 'DELETE', key }));
    },
    unfinished: async (prefix) => (await listUnfinished(prefix)).map((u) => u.key),
    abortUnfinished: async (prefix) => {
      const found = await listUnfinished(prefix);
      for (const u of found) {
        await send(`aborting an unfinished upload of ${u.key}`, () =>
          http.send({ method: 'DELETE', key: u.key, query: { uploadId: u.uploadId } }),
        ).catch((error: StoreError) => {
          // Aborted meanwhile (by another cleanup): that is what we wanted.
          if (error.reason !== 'UploadGone') throw error;
        });
      }
      return found.length;
    },
  };
};
