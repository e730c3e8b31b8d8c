import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { crc32Base64 } from '../../shared/s3/store.ts';
import { bed } from '../support/bed.ts';

/**
 * Parts go signed with UNSIGNED-PAYLOAD and protected by a CRC-32 (shared/s3/store.ts): the real
 * S3 server must check it. A part whose bytes changed on the way is refused, and the right
 * checksum is taken. Sent the way the store sends them: the SDK with the payload unsigned.
 */
describe('S3 part integrity', () => {
  const { s3 } = bed().info;
  const client = new S3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  client.middlewareStack.add(
    (next) => (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'unsignedParts' },
  );
  const Bucket = s3.bucket;
  const Key = `parts-${randomBytes(4).toString('hex')}/x.rdb`;

  it('refuses a part whose bytes do not match its CRC-32; takes the right one', async () => {
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'CRC32' }),
    );
    try {
      const sent = randomBytes(1024 * 1024);
      const changed = Buffer.from(sent);
      changed[12345] = (changed[12345] ?? 0) ^ 1;
      const part = (Body: Buffer, ChecksumCRC32: string) =>
        client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body, ChecksumCRC32 }));
      await expect(part(changed, crc32Base64(sent))).rejects.toMatchObject({
        name: 'BadDigest',
        $metadata: { httpStatusCode: 400 },
      });
      const ok = await part(sent, crc32Base64(sent));
      expect(ok.ETag).toBeTruthy();
      expect(ok.ChecksumCRC32).toBe(crc32Base64(sent));
    } finally {
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
    }
  });
});
