import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3 } from '../infra/testbed/servers/s3.ts';
import { loadServerless, nodeArgsFor } from '../shared/runtime/config.ts';
import { startServer, type TestServer } from '../test/backup/support/servers.ts';
import { benchBucket, IMAGE_NODE_FLAGS, imageCode, root } from './support.ts';

const MiB = 1024 * 1024;
const run = promisify(execFile);

/** Wall time (s), peak RSS (KiB) and CPU time (s) of a command, by GNU time; its stdout and stderr. */
const timed = async (cmd: string, args: string[], env: Record<string, string> = {}) => {
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'TIME %e %M %U %S', cmd, ...args], {
    env: { ...process.env, ...env },
    maxBuffer: 16 * MiB,
  }).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
  const m = /TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
  if (!m) throw new Error(`no timing from ${cmd}: ${stderr.slice(-500)}`);
  return {
    seconds: Number(m[1]),
    peakMiB: Number(m[2]) / 1024,
    cpu: Number(m[3]) + Number(m[4]),
    stdout,
    stderr,
  };
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[s.length >> 1] ?? 0) : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
};
const load = () => loadavg()[0]?.toFixed(1) ?? '?';

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
 * process of its own with the backup function's Node flags, against `redis-cli --rdb /dev/null`
 * on the same server, `rounds` times in turn (the machine is shared: medians, each round's
 * numbers, and the load average beside them); for each dataset size, so RSS can be compared
 * across sizes. Also the same backup in a process that first loads the backup function's other
 * modules, as its own process does. Runs its own redis-server and S3 server (no test bed).
 * `rounds` times each, in turn.
 */
export const benchBackup = async (o: {
  sizes: { label: string; keys: number }[];
  encrypted: boolean;
  /** Runs of each, in turn; 3 unless told. */
  rounds?: number;
}) => {
  const rounds = o.rounds ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'twbed-bench-backup-'));
  const s3 = await startS3({ dir, testbedId: 'bench-backup', host: '127.0.0.1' });
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
    // The data path as the function's pod runs it: the image's JavaScript, no type stripper.
    const [child] = await imageCode(join(dir, 'app'), ['bench/backup-child.ts', 'bench/child-store.ts']);
    const nodeArgs = [...IMAGE_NODE_FLAGS, ...nodeArgsFor(fn)];
    say(`[backup bench] node ${nodeArgs.join(' ')}; ${rounds} rounds; load average ${load()} at the start`);
    const { bucket, store } = await benchBucket(s3);
    const env = {
      BENCH_S3_BUCKET: bucket,
      BENCH_S3_ENDPOINT: s3.endpoint,
      BENCH_S3_ACCESS_KEY_ID: s3.accessKeyId,
      BENCH_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    const mbps = (bytes: number, s: number) => `${(bytes / 1e6 / s).toFixed(0)} MB/s`;
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
      const variants = [{ name: 'zstd', args: [] as string[] }];
      if (o.encrypted) variants.push({ name: 'zstd + AES-256-GCM', args: ['--encrypt'] });
      variants.push({ name: 'zstd, in a process with the backup function loaded', args: ['--function'] });
      const cli: { seconds: number; peakMiB: number }[] = [];
      const runs = new Map<
        string,
        { seconds: number; dataSeconds: number; peakMiB: number; cpu: number; beforeMiB: number }[]
      >();
      let rdbSize = 0;
      for (let round = 0; round < rounds; round++) {
        const c = await timed('/usr/bin/redis-cli', [
          '-h',
          server.host,
          '-p',
          String(server.port),
          '--rdb',
          '/dev/null',
        ]);
        // redis-cli 7.0 exits 1 after the transfer because /dev/null cannot be fsynced; the transfer counts.
        if (!c.stderr.includes('Transfer finished with success'))
          throw new Error(`redis-cli --rdb failed: ${c.stderr.slice(-500)}`);
        cli.push(c);
        for (const v of variants) {
          const key = `bench-${randomBytes(4).toString('hex')}.rdb`;
          const t = await timed(
            process.execPath,
            [...nodeArgs, child as string, '--port', String(server.port), '--key', key, ...v.args],
            env,
          );
          const r = JSON.parse(t.stdout.trim().split('\n').at(-1) ?? '{}') as {
            ms: number;
            rdbSize?: number;
            size: number;
            rssBeforeKiB: number;
          };
          if (!r.rdbSize) throw new Error(`the backup failed: ${t.stderr.slice(-1000)}`);
          rdbSize = r.rdbSize;
          await store.delete(key);
          const row = {
            seconds: t.seconds,
            dataSeconds: r.ms / 1000,
            peakMiB: t.peakMiB,
            cpu: t.cpu,
            beforeMiB: r.rssBeforeKiB / 1024,
          };
          runs.set(v.name, [...(runs.get(v.name) ?? []), row]);
          process.stderr.write(
            `[backup bench] ${size.label} round ${round + 1}: ${v.name} ${t.seconds.toFixed(2)} s (data path ${row.dataSeconds.toFixed(2)} s), RSS ${t.peakMiB.toFixed(0)} MiB, CPU ${t.cpu.toFixed(2)} s; redis-cli ${c.seconds.toFixed(2)} s; load ${load()}\n`,
          );
        }
      }
      const cliS = median(cli.map((c) => c.seconds));
      say(
        `redis-cli --rdb /dev/null, ${size.label} (RDB ${(rdbSize / MiB).toFixed(0)} MiB): median ${cliS.toFixed(2)} s ` +
          `(${mbps(rdbSize, cliS)}; rounds ${cli.map((c) => c.seconds.toFixed(2)).join(', ')}), peak RSS ${median(cli.map((c) => c.peakMiB)).toFixed(0)} MiB`,
      );
      for (const [name, rows] of runs) {
        const s = median(rows.map((r) => r.seconds));
        const d = median(rows.map((r) => r.dataSeconds));
        say(
          `backup of ${size.label}, ${name}: median ${s.toFixed(2)} s as a process, ${d.toFixed(2)} s from connecting to stored ` +
            `(${mbps(rdbSize, d)}; rounds ${rows.map((r) => r.dataSeconds.toFixed(2)).join(', ')}), ` +
            `throughput ratio ${(cliS / d).toFixed(2)}x of redis-cli (as a process, Node's start included: ${(cliS / s).toFixed(2)}x); peak RSS median ${median(rows.map((r) => r.peakMiB)).toFixed(0)} MiB, ` +
            `most ${Math.max(...rows.map((r) => r.peakMiB)).toFixed(0)} MiB (${median(rows.map((r) => r.beforeMiB)).toFixed(0)} MiB before the first byte); ` +
            `CPU ${median(rows.map((r) => r.cpu)).toFixed(2)} s`,
        );
      }
      await server.stop();
      servers.splice(servers.indexOf(server), 1);
    }
    say(`[backup bench] load average ${load()} at the end`);
    return lines;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await s3.server.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
