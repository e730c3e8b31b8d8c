import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { bed } from '../support/bed.ts';

describe('NATS JetStream on the test bed', () => {
  it('publishes and consumes through a durable consumer, acking each message', async () => {
    const { info } = bed();
    const nc = await connect({ servers: info.natsUrl });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'ROUNDTRIP', subjects: ['roundtrip.>'] });
      await jsm.consumers.add('ROUNDTRIP', { durable_name: 'worker', ack_policy: AckPolicy.Explicit });
      const js = jetstream(nc);
      for (let i = 0; i < 5; i++) {
        const ack = await js.publish('roundtrip.a', `m${i}`, { msgID: `id-${i}` });
        expect(ack.duplicate).toBe(false);
      }
      // Same msgID again: JetStream's de-duplication drops it.
      expect((await js.publish('roundtrip.a', 'm0', { msgID: 'id-0' })).duplicate).toBe(true);

      const consumer = await js.consumers.get('ROUNDTRIP', 'worker');
      const seen: string[] = [];
      const batch = await consumer.fetch({ max_messages: 10, expires: 2000 });
      for await (const m of batch) {
        seen.push(m.string());
        m.ack();
      }
      expect(seen).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
      expect((await consumer.info()).num_ack_pending).toBe(0);
      await jsm.streams.delete('ROUNDTRIP');
    } finally {
      await nc.close();
    }
  });
});

describe('S3 server on the test bed', () => {
  const client = () => {
    const { s3 } = bed().info;
    return {
      bucket: s3.bucket,
      s3: new S3Client({
        endpoint: s3.endpoint,
        region: s3.region,
        forcePathStyle: true,
        credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      }),
    };
  };

  it('round-trips a multipart upload, list, get and delete', async () => {
    const { s3, bucket } = client();
    const body = randomBytes(12 * 1024 * 1024); // three 5 MiB parts
    await new Upload({
      client: s3,
      params: { Bucket: bucket, Key: 'rt/big.bin', Body: body },
      partSize: 5 * 1024 * 1024,
    }).done();

    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'rt/' }));
    expect(listed.Contents?.map((o) => [o.Key, o.Size])).toEqual([['rt/big.bin', body.length]]);

    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'rt/big.bin' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);

    const deleted = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'rt/big.bin' }] } }),
    );
    expect(deleted.Errors ?? []).toEqual([]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'rt/' }))).KeyCount).toBe(0);
  });

  it('aborts a multipart upload, leaving no object and no pending upload', async () => {
    const { s3, bucket } = client();
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'rt/aborted.bin' }),
    );
    await s3.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key: 'rt/aborted.bin',
        UploadId,
        PartNumber: 1,
        Body: randomBytes(5 * 1024 * 1024),
      }),
    );
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'rt/aborted.bin', UploadId }));
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'rt/' }))).KeyCount).toBe(0);
  });
});
