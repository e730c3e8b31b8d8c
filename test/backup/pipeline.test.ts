import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Compression } from '../../shared/backup/compression.ts';
import { openStored, storeSnapshot } from '../../shared/backup/pipeline.ts';
import { resolveStore } from '../../shared/backup/store-config.ts';
import { openSnapshot } from '../../shared/redis/snapshot.ts';
import { partSizes } from '../../shared/s3/part-size.ts';
import { s3Store } from '../../shared/s3/store.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { type Content, contentOf, expectSameContent, fillRandom, populate } from './support/dataset.ts';
import { startServer, type TestServer } from './support/servers.ts';

const MiB = 1024 * 1024;

/**
 * The data path against the test bed's real S3 server (versitygw) and real redis-servers: RDB →
 * compression → encryption → SHA-256 → multipart upload, and back; failures leave nothing behind.
 */
describe('backup data path', () => {
  const b = bed();
  const { s3 } = b.info;
  const raw = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const store = (o: Partial<Parameters<typeof s3Store>[0]> = {}) =>
    s3Store({
      bucket: s3.bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      credentialsName: 'test-creds',
      maxAttempts: 2,
      ...o,
    });
  const prefix = `pipeline-${randomBytes(4).toString('hex')}/`;
  const servers: TestServer[] = [];
  let dir = '';
  let source: TestServer;
  let expected: Content;
  const fiveMiBParts = partSizes(undefined, 5 * MiB);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'twbed-pipeline-'));
    source = await startServer({ args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'] });
    servers.push(source);
    const c = await source.client();
    await populate(c);
    // Incompressible bulk too, so even compressed objects span several 5 MiB parts.
    await fillRandom(c, 12);
    expected = await contentOf(c);
    c.close();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await rm(dir, { recursive: true, force: true });
  });

  const sha256Of = async (key: string) => {
    const r = await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    const h = createHash('sha256');
    for await (const c of r.Body as AsyncIterable<Buffer>) h.update(c);
    return h.digest('hex');
  };

  /** Restores `key` into a file and loads it into a fresh server: its content. */
  const restoredContent = async (
    key: string,
    o: { compression: Compression; encryptionKey?: Buffer; sha256: string; size: number },
  ) => {
    const file = join(dir, `${randomBytes(4).toString('hex')}.rdb`);
    await pipeline(await openStored({ store: store(), key, ...o }), createWriteStream(file));
    const loaded = await startServer({ rdb: file });
    servers.push(loaded);
    const c = await loaded.client();
    try {
      return await contentOf(c);
    } finally {
      c.close();
    }
  };

  const cases: [Compression, boolean][] = [
    ['zstd', true],
    ['zstd', false],
    ['gzip', true],
    ['none', false],
  ];
  for (const [compression, encrypted] of cases) {
    it(`${compression}${encrypted ? ' + AES-256-GCM' : ''}: the stored object restores to the same content; its SHA-256 is the status's`, async () => {
      const encryptionKey = encrypted ? randomBytes(32) : undefined;
      const key = `${prefix}${compression}-${encrypted}.rdb`;
      const snap = await openSnapshot({ host: source.host, port: source.port });
      let progress = 0;
      const stored = await storeSnapshot({
        rdb: snap.rdb,
        store: store(),
        key,
        compression,
        encryptionKey,
        partSize: fiveMiBParts,
        onProgress: (n) => {
          progress = n;
        },
      });
      expect(progress).toBe(stored.rdbSize);
      expect(stored.rdbSize).toBeGreaterThan(12 * MiB);
      expect(stored.parts).toBeGreaterThan(1);
      expect((await store().head(key))?.size).toBe(stored.size);
      expect(await sha256Of(key)).toBe(stored.sha256);
      if (compression === 'none' && !encrypted) expect(stored.size).toBe(stored.rdbSize);
      if (compression !== 'none') expect(stored.size).toBeLessThan(stored.rdbSize);
      expectSameContent(
        await restoredContent(key, { compression, ...(encryptionKey ? { encryptionKey } : {}), ...stored }),
        expected,
      );
    });
  }

  it('refuses a changed object on the way back: the checksum, the authentication, a wrong key', async () => {
    const encryptionKey = randomBytes(32);
    for (const encrypted of [false, true]) {
      const key = `${prefix}tamper-${encrypted}.rdb`;
      const snap = await openSnapshot({ host: source.host, port: source.port });
      const o = { compression: 'zstd' as const, ...(encrypted ? { encryptionKey } : {}) };
      const stored = await storeSnapshot({
        rdb: snap.rdb,
        store: store(),
        key,
        partSize: fiveMiBParts,
        ...o,
      });
      // One bit flipped in the middle of the stored object.
      const bytes = Buffer.from(
        await (
          await raw.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
        ).Body!.transformToByteArray(),
      );
      const middle = Math.floor(bytes.length / 2);
      bytes[middle] = (bytes[middle] ?? 0) ^ 1;
      await raw.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: bytes }));
      const read = async (extra: { encryptionKey?: Buffer } = {}) =>
        pipeline(
          await openStored({ store: store(), key, ...o, ...extra, sha256: stored.sha256, size: stored.size }),
          createWriteStream(join(dir, 'tampered.rdb')),
        ).catch((e: unknown) => e);
      expect(await read()).toMatchObject({
        name: 'IntegrityError',
        reason: encrypted ? 'DecryptionFailed' : 'ChecksumMismatch',
      });
      if (encrypted)
        expect(await read({ encryptionKey: randomBytes(32) })).toMatchObject({ reason: 'DecryptionFailed' });
    }
  });

  it('leaves no object and no parts when the source dies mid-upload', async () => {
    const doomed = await startServer({
      args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
    });
    servers.push(doomed);
    const c = await doomed.client();
    await fillRandom(c, 30);
    c.close();
    const key = `${prefix}source-dies.rdb`;
    const snap = await openSnapshot({ host: doomed.host, port: doomed.port });
    let killed = false;
    const error = await storeSnapshot({
      rdb: snap.rdb,
      store: store(),
      key,
      compression: 'none',
      partSize: fiveMiBParts,
      onProgress: (n) => {
        // After at least one part went up.
        if (n > 12 * MiB && !killed) {
          killed = true;
          doomed.proc.kill('SIGKILL');
        }
      },
    }).catch((e: unknown) => e);
    expect(killed).toBe(true);
    expect(error).toMatchObject({ name: 'SnapshotError', reason: 'SourceLost' });
    expect(await store().head(key)).toBeUndefined();
    expect(await store().unfinished(prefix)).toEqual([]);
  });

  it('when S3 goes away mid-upload: a retryable error, no object; the parts go once S3 is back', async () => {
    const key = `${prefix}s3-dies.rdb`;
    const snap = await openSnapshot({ host: source.host, port: source.port });
    let stopping: Promise<void> | undefined;
    const error = await storeSnapshot({
      rdb: snap.rdb,
      store: store(),
      key,
      compression: 'none',
      partSize: fiveMiBParts,
      onProgress: (n) => {
        if (n > 6 * MiB) stopping ??= b.faults.component('s3', 'stop');
      },
    }).catch((e: unknown) => e);
    await stopping;
    try {
      expect(error).toMatchObject({ name: 'StoreError', reason: 'StoreUnavailable', retry: true });
    } finally {
      await b.faults.component('s3', 'start');
    }
    const s = store();
    await until('S3 back', async () =>
      (await s.unfinished(prefix).catch(() => undefined)) ? true : undefined,
    );
    expect(await s.head(key)).toBeUndefined();
    // The abort could not reach S3; the next look at the key aborts what was left.
    await s.abortUnfinished(key);
    expect(await s.unfinished(prefix)).toEqual([]);
  });

  it('aborts the unfinished uploads of a key, never those of a longer key under it (another object’s)', async () => {
    const own = `${prefix}exact/cache/nightly-1.rdb.zst`;
    // A prefix may be any text: another Backup's key can start with this one's.
    const other = `${own}/team-b/cache/x-2.rdb.zst`;
    for (const Key of [own, other])
      await raw.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
    const s = store();
    expect((await s.unfinished(`${prefix}exact/`)).sort()).toEqual([own, other]);
    expect(await s.abortUnfinished(own)).toBe(1);
    expect(await s.unfinished(`${prefix}exact/`)).toEqual([other]);
    await s.abortUnfinished(other);
  });

  it('classifies what only the user can fix: a missing bucket, an unknown key id, a wrong secret', async () => {
    await expect(store({ bucket: 'no-such-bucket-here' }).abortUnfinished(prefix)).rejects.toMatchObject({
      reason: 'BucketNotFound',
      retry: false,
    });
    await expect(
      store({ credentials: { accessKeyId: 'nobody', secretAccessKey: s3.secretAccessKey } }).abortUnfinished(
        prefix,
      ),
    ).rejects.toMatchObject({ reason: 'InvalidCredentials', retry: false });
    const wrongSecret = store({ credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: 'wrong' } });
    await expect(wrongSecret.abortUnfinished(prefix)).rejects.toMatchObject({
      reason: 'InvalidCredentials',
      retry: false,
      message: expect.stringMatching(/AWS_SECRET_ACCESS_KEY in Secret test-creds/),
    });
  });

  it('reads credentials and the key from Secrets, and says what is wrong with them', async () => {
    await installCrds(b.info);
    const ns = await createNamespace(b.core, 'store');
    const secret = (name: string, data: Record<string, Buffer | string>) =>
      b.core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name },
          data: Object.fromEntries(
            Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
          ),
        },
      });
    await secret('creds', {
      AWS_ACCESS_KEY_ID: `${s3.accessKeyId}\n`,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('half', { AWS_ACCESS_KEY_ID: s3.accessKeyId });
    const key = randomBytes(32);
    await secret('key', { key });
    await secret('short-key', { key: randomBytes(16) });
    await secret('no-key', { other: 'x' });
    const spec = (credentials: string, encryption = '') => ({
      s3: {
        bucket: s3.bucket,
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentialsSecret: { name: credentials },
      },
      compression: 'gzip' as const,
      encryption: { secretName: encryption },
    });
    const resolve = (credentials: string, encryption?: string) =>
      resolveStore({ kube: b.kc, namespace: ns, spec: spec(credentials, encryption) });
    try {
      const ok = await resolve('creds', 'key');
      expect(ok.encryption?.key.equals(key)).toBe(true);
      expect(ok.compression).toBe('gzip');
      // The credentials work (the trailing newline of a --from-file Secret is no part of them).
      expect(await ok.store.abortUnfinished(prefix)).toBe(0);
      const fails = (p: Promise<unknown>) =>
        p.then(
          () => 'resolved',
          (e: unknown) => e,
        );
      expect(await fails(resolve('missing'))).toMatchObject({
        reason: 'CredentialsSecretNotFound',
        message: expect.stringMatching(
          /Secret missing .* does not exist in namespace .*: create it with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
        ),
      });
      expect(await fails(resolve('half'))).toMatchObject({
        reason: 'CredentialsSecretIncomplete',
        message: expect.stringMatching(/has no AWS_SECRET_ACCESS_KEY: add it/),
      });
      expect(await fails(resolve('creds', 'nothing'))).toMatchObject({ reason: 'EncryptionSecretNotFound' });
      expect(await fails(resolve('creds', 'no-key'))).toMatchObject({ reason: 'EncryptionKeyMissing' });
      expect(await fails(resolve('creds', 'short-key'))).toMatchObject({
        reason: 'EncryptionKeyInvalid',
        message: expect.stringMatching(/holds 16 bytes; an AES-256 key is exactly 32 bytes/),
      });
    } finally {
      await b.core.deleteNamespace({ name: ns });
    }
  });
});
