import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { s3Http } from '../../shared/s3/http.ts';
import { crc32Base64 } from '../../shared/s3/store.ts';
import { tag } from '../../shared/s3/xml.ts';
import { bed } from '../support/bed.ts';

/**
 * Parts go signed with UNSIGNED-PAYLOAD and protected by a CRC-32 (shared/s3/store.ts): the real
 * S3 server must check it. A part whose bytes changed on the way is refused, so is a part without
 * a checksum in an upload created with one, and the right checksum is taken.
 */
describe('S3 part integrity', () => {
  const { s3 } = bed().info;
  const http = s3Http({
    bucket: s3.bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    maxAttempts: 1,
  });
  const key = `parts-${randomBytes(4).toString('hex')}/x.rdb`;
  const part = (uploadId: string, body: Buffer, checksum?: string) =>
    http.send({
      method: 'PUT',
      key,
      query: { partNumber: '1', uploadId },
      headers: checksum ? { 'x-amz-checksum-crc32': checksum } : {},
      body,
      unsignedPayload: true,
    });

  it('refuses a part whose bytes do not match its CRC-32, or that has none; takes the right one', async () => {
    const created = await http.send({
      method: 'POST',
      key,
      query: { uploads: '' },
      headers: { 'x-amz-checksum-algorithm': 'CRC32' },
    });
    const uploadId = tag(created.body.toString(), 'UploadId') ?? '';
    try {
      const sent = randomBytes(1024 * 1024);
      const changed = Buffer.from(sent);
      changed[12345] = (changed[12345] ?? 0) ^ 1;
      await expect(part(uploadId, changed, crc32Base64(sent))).rejects.toMatchObject({
        status: 400,
        code: 'BadDigest',
      });
      await expect(part(uploadId, sent)).rejects.toMatchObject({ status: 400 });
      const ok = await part(uploadId, sent, crc32Base64(sent));
      expect(ok.headers.etag).toBeTruthy();
      expect(ok.headers['x-amz-checksum-crc32']).toBe(crc32Base64(sent));
    } finally {
      await http.send({ method: 'DELETE', key, query: { uploadId } });
    }
  });
});
