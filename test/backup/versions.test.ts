import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { ipOf, redisClusters, refusals, startFunction } from '../support/redis.ts';
import { backups, restoredContent } from './support/backups.ts';
import { contentOf, expectSameContent, populate } from './support/dataset.ts';
import { binaryClient } from './support/resp.ts';
import type { ServerBuild, TestServer } from './support/servers.ts';

/** Backups of clusters running Redis 6.2 and Valkey 8.1 (the test bed's other images). */
describe('backup of other server versions', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  const workers: Worker[] = [];
  const servers: TestServer[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const { s3 } = b.info;
  const key = randomBytes(32);

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'backup-versions');
    dir = await mkdtemp(join(tmpdir(), 'twbed-backup-versions-'));
    const id = `backup-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    for (const fn of ['reconcile', 'health', 'backup'])
      workers.push(await startFunction(b, ns, id, fn, { TIDEWAY_REPLICA: '0' }));
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
    await secret('s3-creds', {
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    });
    await secret('backup-key', { key });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(servers.map((s) => s.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    expect(refusals(workers)).toEqual([]);
  });

  const cases: [string, Record<string, unknown>, ServerBuild, RegExp][] = [
    ['redis62', { version: '6.2' }, 'redis-6.2', /^6\.2\./],
    ['valkey81', { version: '7.0', image: 'valkey/valkey:8.1' }, 'valkey-8.1', /^8\.1\./],
  ];
  for (const [name, spec, build, version] of cases) {
    it(`${name}: a Backup completes and restores to the same content on the same server build`, async () => {
      await rdc.apply(name, {
        ...spec,
        replicas: 2,
        backup: {
          store: {
            s3: {
              bucket: s3.bucket,
              endpoint: s3.endpoint,
              forcePathStyle: true,
              prefix: `e2e-versions/${ns}`,
              credentialsSecret: { name: 's3-creds' },
            },
            encryption: { secretName: 'backup-key' },
          },
        },
      });
      const rc = await rdc.ready(name);
      const pods = await rdc.pods(name);
      const password = await rdc.password(name);
      const master = pods.find((p) => p.metadata?.name === rc.status?.master);
      const c = await binaryClient({ host: ipOf(master), port: 6379, password });
      await populate(c, { seed: name });
      expect(Number(await c.call('WAIT', 1, 10_000))).toBe(1);
      c.close();
      await bk.create(`${name}-b`, { cluster: { name } });
      const done = await bk.phase(`${name}-b`, 'Completed', 180_000);
      expect(done.status?.redisVersion).toMatch(version);
      const source = pods.find((p) => p.metadata?.name === done.status?.source);
      const sc = await binaryClient({ host: ipOf(source), port: 6379, password });
      const expected = await contentOf(sc);
      sc.close();
      // Loaded by the same build the cluster runs.
      const restored = await restoredContent(b, done, {
        dir,
        compression: 'zstd',
        encryptionKey: key,
        servers,
        build,
      });
      expectSameContent(restored, expected);
    });
  }
});
