import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Backup } from '../../../shared/api/generated.ts';
import type { Compression } from '../../../shared/backup/compression.ts';
import { openStored } from '../../../shared/backup/pipeline.ts';
import { TIDEWAY_KINDS } from '../../../shared/kube/resources.ts';
import { s3Store } from '../../../shared/s3/store.ts';
import { type bed, until } from '../../support/bed.ts';
import { contentOf } from './dataset.ts';
import { type ServerBuild, startServer, type TestServer } from './servers.ts';

const BACKUP = TIDEWAY_KINDS.Backup;

/** Backup objects in one namespace, as a user makes and reads them. */
export const backups = (b: ReturnType<typeof bed>, ns: () => string) => {
  const get = async (name: string) =>
    (await b.custom.getNamespacedCustomObject({ ...BACKUP, namespace: ns(), name })) as Backup;
  return {
    get,
    create: (name: string, spec: Record<string, unknown>) =>
      b.custom.createNamespacedCustomObject({
        ...BACKUP,
        namespace: ns(),
        body: { apiVersion: 'tideway.dev/v1alpha1', kind: 'Backup', metadata: { name }, spec },
      }),
    delete: (name: string) => b.custom.deleteNamespacedCustomObject({ ...BACKUP, namespace: ns(), name }),
    /** Waits for a phase (Completed, Failed); any other end fails at once with the status. */
    phase: (name: string, phase: 'Completed' | 'Failed' | 'Running', timeoutMs = 120_000) =>
      until(
        `Backup ${name} ${phase}`,
        async () => {
          const bk = await get(name);
          const p = bk.status?.phase;
          if (p === phase) return bk;
          if ((p === 'Completed' || p === 'Failed') && phase !== p)
            throw new Error(`Backup ${name} ended ${p}: ${JSON.stringify(bk.status)}`);
          return undefined;
        },
        timeoutMs,
        250,
      ),
    gone: (name: string, timeoutMs = 60_000) =>
      until(
        `Backup ${name} gone`,
        () =>
          get(name).then(
            () => undefined,
            (e: { code?: number }) => (e.code === 404 ? true : undefined),
          ),
        timeoutMs,
        250,
      ),
  };
};

/** The test bed's bucket, as the tests (not the product) read it. */
export const bedStore = (b: ReturnType<typeof bed>) =>
  s3Store({
    bucket: b.info.s3.bucket,
    region: b.info.s3.region,
    endpoint: b.info.s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: b.info.s3.accessKeyId, secretAccessKey: b.info.s3.secretAccessKey },
    credentialsName: 'test bed',
    maxAttempts: 2,
  });

/** `s3://bucket/key` → key. */
export const keyOf = (location: string, bucket: string) => location.slice(`s3://${bucket}/`.length);

/**
 * A completed Backup's object, checked (SHA-256 of status), decrypted and decompressed into a
 * file, loaded into a fresh redis-server: that server's content.
 */
export const restoredContent = async (
  b: ReturnType<typeof bed>,
  bk: Backup,
  o: {
    dir: string;
    compression: Compression;
    encryptionKey?: Buffer;
    servers: TestServer[];
    build?: ServerBuild;
  },
) => {
  const file = join(o.dir, `${randomBytes(4).toString('hex')}.rdb`);
  const s = bk.status ?? {};
  await pipeline(
    await openStored({
      store: bedStore(b),
      key: keyOf(s.location ?? '', b.info.s3.bucket),
      compression: o.compression,
      ...(o.encryptionKey ? { encryptionKey: o.encryptionKey } : {}),
      sha256: s.sha256 ?? '',
      size: s.size ?? -1,
    }),
    createWriteStream(file),
  );
  const loaded = await startServer({ rdb: file, ...(o.build ? { build: o.build } : {}) });
  o.servers.push(loaded);
  const c = await loaded.client();
  try {
    return await contentOf(c);
  } finally {
    c.close();
  }
};

/** The Secret `s3-creds` in `namespace`: the test bed's S3 credentials, as a user would give them. */
export const createS3Credentials = (b: ReturnType<typeof bed>, namespace: string) =>
  b.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 's3-creds' },
      stringData: {
        AWS_ACCESS_KEY_ID: b.info.s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: b.info.s3.secretAccessKey,
      },
    },
  });

/** A BackupStore on the test bed's bucket under `prefix`, with the credentials above (zstd unless said). */
export const bedStoreSpec = (
  b: ReturnType<typeof bed>,
  prefix: string,
  more: Record<string, unknown> = {},
) => ({
  s3: {
    bucket: b.info.s3.bucket,
    endpoint: b.info.s3.endpoint,
    forcePathStyle: true,
    prefix,
    credentialsSecret: { name: 's3-creds' },
  },
  compression: 'zstd',
  ...more,
});
