import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startS3 } from '../infra/testbed/servers/s3.ts';
import { loadServerless, nodeArgsFor } from '../shared/runtime/config.ts';
import { s3Store } from '../shared/s3/store.ts';
import { startServer, type TestServer } from '../test/backup/support/servers.ts';
import { root } from './support.ts';

const MiB = 1024 * 1024;
const run = promisify(execFile);

/** Wall time (s) and peak RSS (KiB) of a command, by GNU time; its stdout and stderr. */
const timed = async (cmd: string, args: string[], env: Record<string, string> = {}) => {
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'TIME %e %M', cmd, ...args], {
    env: { ...process.env, ...env },
    maxBuffer: 16 * MiB,
  }).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
  const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
  if (!m) throw new Error(`no timing from ${cmd}: ${stderr.slice(-500)}`);
  return { seconds: Number(m[1]), peakMiB: Number(m[2]) / 1024, stdout, stderr };
};

/** `keys` keys of 1,000 random bytes (incompressible: the RDB is as large as the data). */
const fill = async (server: TestServer, keys: number) => {
  const c = await server.client();
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < keys; i++) {
    batch.push(c.call('SET', `key:${i}`, randomBytes(1000)));
    if (batch.length === 2000) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  c.close();
};

/**
 * A backup of `keys` keys of 1,000 bytes through the product's data path (snapshot over the
 * replication protocol → zstd → [AES-256-GCM] → SHA-256 → S3 multipart into versitygw), in a
 * process of its own, against `redis-cli --rdb /dev/null` on the same server in the same run:
 * wall time, throughput ratio and peak RSS of each; for each dataset size, so RSS can be compared
 * across sizes. Runs its own redis-server and S3 server (no test bed).
 */
export const benchBackup = async (o: { sizes: { label: string; keys: number }[]; encrypted: boolean }) => {
  const dir = await mkdtemp(join(tmpdir(), 'twbed-bench-backup-'));
  const s3 = await startS3({ dir, testbedId: 'bench-backup' });
  const servers: TestServer[] = [];
  const lines: string[] = [];
  const say = (l: string) => {
    lines.push(l);
    process.stderr.write(`${l}\n`);
  };
  try {
    // The Node flags the backup function runs with (its memorySize in serverless.yml).
    const fn = (await loadServerless(join(root, 'serverless.yml'))).functions.backup;
    if (!fn) throw new Error('serverless.yml has no backup function');
    const nodeArgs = nodeArgsFor(fn);
    const bucket = 'bench';
    const credentials = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey };
    await new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials }).send(
      new CreateBucketCommand({ Bucket: bucket }),
    );
    const store = s3Store({
      bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials,
      credentialsName: 'bench',
    });
    const env = {
      BENCH_S3_BUCKET: bucket,
      BENCH_S3_ENDPOINT: s3.endpoint,
      BENCH_S3_ACCESS_KEY_ID: s3.accessKeyId,
      BENCH_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    for (const size of o.sizes) {
      // Diskless with no delay, as redis-cli --rdb gets it on Redis 7 (rdb-only).
      const server = await startServer({
        args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
      });
      servers.push(server);
      const filled = performance.now();
      await fill(server, size.keys);
      process.stderr.write(
        `[backup bench] ${size.label}: ${size.keys} keys in ${((performance.now() - filled) / 1000).toFixed(1)} s\n`,
      );

      const cli = await timed('/usr/bin/redis-cli', [
        '-h',
        server.host,
        '-p',
        String(server.port),
        '--rdb',
        '/dev/null',
      ]);
      // redis-cli 7.0 exits 1 after the transfer because /dev/null cannot be fsynced; the transfer counts.
      if (!cli.stderr.includes('Transfer finished with success'))
        throw new Error(`redis-cli --rdb failed: ${cli.stderr.slice(-500)}`);
      const variants = [{ name: 'zstd', args: [] as string[] }];
      if (o.encrypted) variants.push({ name: 'zstd + AES-256-GCM', args: ['--encrypt'] });
      for (const v of variants) {
        const key = `bench-${randomBytes(4).toString('hex')}.rdb`;
        const t = await timed(
          process.execPath,
          [
            ...nodeArgs,
            join(root, 'bench', 'backup-child.ts'),
            '--port',
            String(server.port),
            '--key',
            key,
            ...v.args,
          ],
          env,
        );
        const r = JSON.parse(t.stdout.trim().split('\n').at(-1) ?? '{}') as {
          rdbSize: number;
          size: number;
          parts: number;
          rssBeforeKiB: number;
        };
        await store.delete(key);
        const mbps = (bytes: number, s: number) => `${(bytes / 1e6 / s).toFixed(0)} MB/s`;
        say(
          `backup of ${size.label} (${size.keys} keys of 1000 B, RDB ${(r.rdbSize / MiB).toFixed(0)} MiB), ${v.name}: ` +
            `${t.seconds.toFixed(2)} s (${mbps(r.rdbSize, t.seconds)}), peak RSS ${t.peakMiB.toFixed(0)} MiB ` +
            `(${(r.rssBeforeKiB / 1024).toFixed(0)} MiB before the first byte), ` +
            `stored ${(r.size / MiB).toFixed(0)} MiB in ${r.parts} parts; ` +
            `redis-cli --rdb /dev/null ${cli.seconds.toFixed(2)} s (${mbps(r.rdbSize, cli.seconds)}), peak RSS ${cli.peakMiB.toFixed(0)} MiB; ` +
            `throughput ratio ${(cli.seconds / t.seconds).toFixed(2)}x of redis-cli`,
        );
      }
      await server.stop();
      servers.splice(servers.indexOf(server), 1);
    }
    return lines;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await s3.server.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
