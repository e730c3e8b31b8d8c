import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
  type ServerSideEncryption,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { StoreError } from '../backup/errors.ts';
import type { ObjectStore } from '../backup/object-store.ts';
import { classifyS3Error, type S3ErrorContext } from './errors.ts';
import { type MultipartApi, multipartUpload } from './multipart.ts';

/** CRC-32 of a part, as S3's `x-amz-checksum-crc32` wants it: big-endian, base64. zlib's is native. */
export const crc32Base64 = (b: Buffer): string => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(b));
  return out.toString('base64');
};

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
  /** Requests per call, with the SDK's back-off in between (transient failures only). */
  maxAttempts?: number;
  /** Parts uploading at once. */
  concurrency?: number;
  /** Told when an abort failed and parts stay behind until abortUnfinished. */
  onAbortFailed?: (key: string, error: unknown) => void;
  /** S3_SILENCE_MS unless said (tests). */
  silenceMs?: number;
};

/**
 * An S3 bucket (AWS or any S3-compatible server) as an ObjectStore, through AWS SDK v3.
 *
 * Parts of an upload are protected by a CRC-32 the server checks (`ChecksumCRC32`, computed with
 * Node's native zlib; the upload is created with that algorithm, as S3 asks, and the completion
 * names each part's), and signed with UNSIGNED-PAYLOAD: the signature covers the checksum header,
 * not a SHA-256 of the body, so neither side hashes each part once more. A part changed on the way
 * is refused by the server (BadDigest); the object as a whole is checked against the backup's
 * SHA-256 on the way back (shared/backup/pipeline.ts openStored).
 */
/** How long a request may go without a byte either way before it fails (and is retried). */
export const S3_SILENCE_MS = 120_000;

export const s3Store = (c: S3StoreConfig): ObjectStore => {
  const client = new S3Client({
    region: c.region,
    ...(c.endpoint ? { endpoint: c.endpoint } : {}),
    forcePathStyle: c.forcePathStyle ?? false,
    credentials: c.credentials,
    maxAttempts: c.maxAttempts ?? 4,
    // Extra checksums only where the API requires them: S3-compatible servers differ in what they
    // accept, and the backup carries its own SHA-256, checked on the way back.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A server that accepts a request and then says nothing fails it after two minutes of silence
    // (the socket's idle time; a slow upload that moves goes on): the SDK's requestTimeout only
    // warns unless told to throw, and would cut a large part that is still moving.
    requestHandler: { connectionTimeout: 5000, socketTimeout: c.silenceMs ?? S3_SILENCE_MS },
  });
  // A part's body goes unhashed (its CRC-32 header is signed instead): the signer takes a payload
  // hash that is already set, as S3 allows.
  client.middlewareStack.add(
    (next, context) => (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (context.commandName === 'UploadPartCommand' && request.headers)
        request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'tidewayUnsignedParts' },
  );
  const ctx: S3ErrorContext = {
    bucket: c.bucket,
    endpoint: c.endpoint || `AWS S3 (${c.region})`,
    credentials: c.credentialsName,
  };
  const Bucket = c.bucket;
  const sse = c.serverSideEncryption
    ? { ServerSideEncryption: c.serverSideEncryption as ServerSideEncryption }
    : {};
  /** One request, its failure classified. */
  const send = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw classifyS3Error(error, ctx, what);
    }
  };

  const api: MultipartApi = {
    create: async (Key, ContentType) => {
      const r = await send(`starting the upload of ${Key}`, () =>
        client.send(
          new CreateMultipartUploadCommand({ Bucket, Key, ContentType, ChecksumAlgorithm: 'CRC32', ...sse }),
        ),
      );
      if (!r.UploadId) throw new StoreError('StoreRejected', `no upload id for ${Key}`, true);
      return r.UploadId;
    },
    uploadPart: async (Key, UploadId, PartNumber, Body, signal) => {
      const ChecksumCRC32 = crc32Base64(Body);
      const r = await send(`uploading part ${PartNumber} of ${Key}`, () =>
        client.send(
          new UploadPartCommand({
            Bucket,
            Key,
            UploadId,
            PartNumber,
            Body,
            ContentLength: Body.length,
            ChecksumCRC32,
          }),
          signal ? { abortSignal: signal } : {},
        ),
      );
      if (!r.ETag) throw new StoreError('StoreRejected', `no ETag for part ${PartNumber} of ${Key}`, true);
      return { PartNumber, ETag: r.ETag, ChecksumCRC32 };
    },
    complete: async (Key, UploadId, Parts) => {
      try {
        await send(`completing the upload of ${Key}`, () =>
          client.send(
            new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }),
          ),
        );
      } catch (error) {
        // The SDK tries again when an answer is lost; a server that completed the upload on the
        // first try then knows it no more. Not a reason to fail the Backup for good: the attempt
        // is tried again, which writes the object anew.
        if ((error as StoreError).reason !== 'UploadGone') throw error;
        throw new StoreError(
          'UploadGone',
          `the completion of the upload of ${Key} was not confirmed (the upload is gone: completed by a try whose answer was lost, or aborted by someone else); trying again`,
          true,
          { cause: error },
        );
      }
    },
    abort: async (Key, UploadId) => {
      await send(`aborting the upload of ${Key}`, () =>
        client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })),
      );
    },
  };

  const listUnfinished = async (prefix: string) => {
    const found: { Key: string; UploadId: string }[] = [];
    let KeyMarker: string | undefined;
    let UploadIdMarker: string | undefined;
    for (;;) {
      const r = await send(`listing unfinished uploads under ${prefix}`, () =>
        client.send(
          new ListMultipartUploadsCommand({
            Bucket,
            Prefix: prefix,
            ...(KeyMarker ? { KeyMarker } : {}),
            ...(UploadIdMarker ? { UploadIdMarker } : {}),
          }),
        ),
      );
      for (const u of r.Uploads ?? [])
        if (u.Key && u.UploadId) found.push({ Key: u.Key, UploadId: u.UploadId });
      if (!r.IsTruncated || (!r.NextKeyMarker && !r.NextUploadIdMarker)) return found;
      KeyMarker = r.NextKeyMarker;
      UploadIdMarker = r.NextUploadIdMarker;
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
    put: async (Key, Body, ContentType) => {
      await send(`writing ${Key}`, () =>
        client.send(
          new PutObjectCommand({ Bucket, Key, Body, ContentType, ContentLength: Body.length, ...sse }),
        ),
      );
    },
    get: async (Key, maxBytes) => {
      try {
        const r = await client.send(new GetObjectCommand({ Bucket, Key }));
        if ((r.ContentLength ?? 0) > maxBytes)
          throw new StoreError('ObjectTooLarge', `${Key} is larger than ${maxBytes} bytes`, false);
        return Buffer.from((await r.Body?.transformToByteArray()) ?? []);
      } catch (error) {
        const e = classifyS3Error(error, ctx, `reading ${Key}`);
        if (e.reason === 'ObjectNotFound') return undefined;
        throw e;
      }
    },
    download: async (Key, signal) => {
      const r = await send(`downloading ${Key}`, () =>
        client.send(new GetObjectCommand({ Bucket, Key }), signal ? { abortSignal: signal } : {}),
      );
      return r.Body as Readable;
    },
    head: async (Key) => {
      try {
        const r = await client.send(new HeadObjectCommand({ Bucket, Key }));
        return { size: r.ContentLength ?? 0 };
      } catch (error) {
        // HEAD has no body: a missing object is a bare 404.
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404)
          return undefined;
        throw classifyS3Error(error, ctx, `looking up ${Key}`);
      }
    },
    delete: async (Key) => {
      await send(`deleting ${Key}`, () => client.send(new DeleteObjectCommand({ Bucket, Key })));
    },
    unfinished: async (prefix) => (await listUnfinished(prefix)).map((u) => u.Key),
    abortUnfinished: async (key) => {
      // Listed by prefix (S3 has no other way), aborted only when the key is that very key: a
      // longer key under it is another object's (a prefix may be any text, another tenant's).
      const found = (await listUnfinished(key)).filter((u) => u.Key === key);
      for (const u of found) {
        await send(`aborting an unfinished upload of ${u.Key}`, () =>
          client.send(new AbortMultipartUploadCommand({ Bucket, ...u })),
        ).catch((error: StoreError) => {
          // Aborted meanwhile (by another cleanup): that is what we wanted.
          if (error.reason !== 'UploadGone') throw error;
        });
      }
      return found.length;
    },
  };
};
