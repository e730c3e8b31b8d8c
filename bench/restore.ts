import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startS3 } from '../infra/testbed/servers/s3.ts';
import { storeSnapshot } from '../shared/backup/pipeline.ts';
import { openSnapshot } from '../shared/redis/snapshot.ts';
import { loadModeFor, loadRdb } from '../shared/restore/load.ts';
import { loadServerless, nodeArgsFor } from '../shared/runtime/config.ts';
import { partSizes } from '../shared/s3/part-size.ts';
import { startServer, type TestServer } from '../test/backup/support/servers.ts';
import { benchBucket, IMAGE_NODE_FLAGS, imageCode, root } from './support.ts';

const MB = 1024 * 1024;
const run = promisify(execFile);

/** Peak RSS of this process while `fn` runs, sampled every 50 ms. */
const peakRss = async <T>(fn: () => Promise<T>): Promise<{ result: T; peak: number; before: number }> => {
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 50);
  try {
    return { result: await fn(), peak, before };
  } finally {
    clearInterval(timer);
  }
};

/** `n` keys `<prefix>:<i>` of `bytes` random bytes each: an RDB of the size the data has. */
const fillKeys = async (
  c: Awaited<ReturnType<TestServer['client']>>,
  n: number,
  bytes: number,
  prefix: string,
) => {
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    batch.push(c.call('SET', `${prefix}:${i}`, randomBytes(bytes)));
    if (batch.length === 1000) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[s.length >> 1] ?? 0) : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
};
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * Restore by replication (shared/restore) against the baseline of a native load: redis-server
 * started on the same RDB file, timed until it answers PING. Same file, same machine, same run.
 * `keys` keys of `valueBytes` random bytes each. The machine's speed moves by tens of percent
 * within minutes, so each round measures the native load right before the loads it is compared
 * with, and the ratios are of medians over `rounds` rounds (each round's beside them).
 */
export const benchRestore = async (o: { keys: number; valueBytes: number; rounds?: number }) => {
  const rounds = o.rounds ?? 3;
  const servers: TestServer[] = [];
  const start = async (args: Parameters<typeof startServer>[0]) => {
    const s = await startServer(args);
    servers.push(s);
    return s;
  };
  const stop = async (s: TestServer) => {
    await s.stop();
    servers.splice(servers.indexOf(s), 1);
  };
  try {
    const source = await start({});
    const c = await source.client();
    await fillKeys(c, o.keys, o.valueBytes, 'key');
    await c.call('SAVE');
    // What the data set takes in memory, as a backup's manifest records it.
    const incoming = Number(/used_memory:(\d+)/.exec(String(await c.call('INFO', 'memory')))?.[1]);
    c.close();
    const file = join(source.dir, 'dump.rdb');
    const size = (await stat(file)).size;
    // The file written back and in the page cache before anything is timed: both sides read it
    // from memory, and no writeback of it competes with the first round.
    await run('sync');
    for await (const _ of createReadStream(file, { highWaterMark: 4 * MB }));

    // Tideway: a running server replicates the file from the feed and is promoted back. The mode
    // is the product's choice (loadModeFor) for three masters: one holding data (a tenth of the
    // size, other keys) without a memory limit, the same with a limit that holds both data sets,
    // and an empty one (a new cluster's).
    const cases = [
      { label: 'in place, no memory limit', fill: true, limit: undefined, expect: 'disk' },
      { label: 'in place, a 4 GiB limit', fill: true, limit: 4 * 1024 * MB, expect: 'memory' },
      { label: 'empty master', fill: false, limit: undefined, expect: 'memory' },
    ] as const;
    const native: number[] = [];
    const fed = new Map<string, { ms: number[]; rssBefore: number[]; peak: number[] }>();
    for (let round = 0; round < rounds; round++) {
      // Baseline: the server loads the file itself at start.
      const nativeStarted = performance.now();
      const loaded = await start({ rdb: file });
      native.push(performance.now() - nativeStarted);
      await stop(loaded);
      for (const k of cases) {
        const target = await start({ password: 'bench' });
        const t = await target.client();
        if (k.fill) await fillKeys(t, Math.ceil(o.keys / 10), o.valueBytes, 'mine');
        const before = String(await t.call('INFO', 'all'));
        t.close();
        const { mode } = loadModeFor({
          server: { product: 'redis', version: '7.0' },
          keys: Number(/db0:keys=(\d+)/.exec(before)?.[1] ?? 0),
          rss: Number(/used_memory_rss:(\d+)/.exec(before)?.[1]),
          limit: k.limit,
          incoming,
        });
        if (mode !== k.expect) throw new Error(`${k.label}: loadModeFor chose ${mode}, not ${k.expect}`);
        const fedStarted = performance.now();
        const {
          result,
          peak,
          before: rssBefore,
        } = await peakRss(() =>
          loadRdb({
            target: { host: target.host, port: target.port, password: 'bench' },
            feedHost: '127.0.0.1',
            targetPeer: '127.0.0.1',
            mode,
            // As the product frames it: the EOF mark when parsed from the socket.
            open: async () => ({
              rdb: createReadStream(file, { highWaterMark: MB }),
              ...(mode === 'disk' ? { size } : {}),
            }),
          }),
        );
        const ms = performance.now() - fedStarted;
        if (result.keys !== o.keys) throw new Error(`restored ${result.keys} keys, expected ${o.keys}`);
        const name = `${k.label} (${mode})`;
        const row = fed.get(name) ?? { ms: [], rssBefore: [], peak: [] };
        row.ms.push(ms);
        row.rssBefore.push(rssBefore);
        row.peak.push(peak);
        fed.set(name, row);
        process.stderr.write(
          `[restore bench] round ${round + 1}: ${name} ${sec(ms)}, native ${sec(native[round] ?? 0)}\n`,
        );
        await stop(target);
      }
    }
    const nativeMs = median(native);
    const lines = [
      `native load of a ${(size / MB).toFixed(0)} MiB RDB (${o.keys} keys), redis-server started on the file: median ${sec(nativeMs)} (rounds ${native.map(sec).join(', ')})`,
    ];
    for (const [name, row] of fed) {
      const ms = median(row.ms);
      lines.push(
        `restore by replication, ${name}: median ${sec(ms)} (${Math.round(o.keys / (ms / 1000))} keys/s; rounds ${row.ms.map(sec).join(', ')}); ` +
          `ratio native/replication ${(nativeMs / ms).toFixed(2)}x (each round: ${row.ms.map((m, i) => `${((native[i] ?? 0) / m).toFixed(2)}x`).join(', ')}); ` +
          `RSS of the benchmark process ${(median(row.rssBefore) / MB).toFixed(0)} MiB before, ${(Math.max(...row.peak) / MB).toFixed(0)} MiB at most while it streams`,
      );
    }
    lines.push(...(await fullPath({ source, start, keys: o.keys, valueBytes: o.valueBytes, nativeMs })));
    return lines;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
};

/**
 * The restore function's whole data path for the same data: the backup as the backup function
 * stores it (zstd, in an S3 server of its own), read once to verify (SHA-256, decompression, size)
 * and once more into a running master, in a process of its own with the restore function's Node
 * flags and the image's JavaScript (bench/restore-child.ts): in place (disk, the product's mode
 * without a memory limit) and into an empty master (memory, a new cluster's), each also with
 * `verifyFirst: false` (the header, then one read while it loads). Only the Kubernetes
 * bookkeeping and the optional safety backup are left out.
 */
const fullPath = async (o: {
  source: TestServer;
  start: (args: Parameters<typeof startServer>[0]) => Promise<TestServer>;
  keys: number;
  valueBytes: number;
  nativeMs: number;
}) => {
  const dir = await mkdtemp(join(tmpdir(), 'twbed-bench-restore-'));
  const s3 = await startS3({ dir, testbedId: 'bench-restore', host: '127.0.0.1' });
  try {
    const fn = (await loadServerless(join(root, 'serverless.yml'))).functions.restore;
    if (!fn) throw new Error('serverless.yml has no restore function');
    const [child] = await imageCode(join(dir, 'app'), ['bench/restore-child.ts', 'bench/child-store.ts']);
    const nodeArgs = [...IMAGE_NODE_FLAGS, ...nodeArgsFor(fn)];
    const { bucket, store } = await benchBucket(s3);
    const snap = await openSnapshot({ host: o.source.host, port: o.source.port });
    const key = 'bench.rdb.zst';
    const stored = await storeSnapshot({
      rdb: snap.rdb,
      store,
      key,
      compression: 'zstd',
      partSize: partSizes(snap.header.size),
    });
    const lines: string[] = [];
    for (const k of [
      { label: 'in place (disk)', mode: 'disk', fill: true, singlePass: false },
      { label: 'into an empty master (memory)', mode: 'memory', fill: false, singlePass: false },
      { label: 'in place (disk), verifyFirst: false', mode: 'disk', fill: true, singlePass: true },
      {
        label: 'into an empty master (memory), verifyFirst: false',
        mode: 'memory',
        fill: false,
        singlePass: true,
      },
    ] as const) {
      const target = await o.start({ password: 'bench' });
      if (k.fill) {
        const t = await target.client();
        await fillKeys(t, Math.ceil(o.keys / 10), o.valueBytes, 'mine');
        t.close();
      }
      const { stdout, stderr } = await run(
        process.execPath,
        [
          ...nodeArgs,
          child as string,
          ...['--port', String(target.port), '--password', 'bench', '--key', key, '--mode', k.mode],
          ...['--sha256', stored.sha256, '--size', String(stored.size), '--rdb-size', String(stored.rdbSize)],
          ...(k.singlePass ? ['--single-pass'] : []),
        ],
        {
          env: {
            ...process.env,
            BENCH_S3_BUCKET: bucket,
            BENCH_S3_ENDPOINT: s3.endpoint,
            BENCH_S3_ACCESS_KEY_ID: s3.accessKeyId,
            BENCH_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
          },
          maxBuffer: 16 * MB,
        },
      ).catch((e: { stdout?: string; stderr?: string }) => ({
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
      }));
      const r = JSON.parse(stdout.trim().split('\n').at(-1) || '{}') as {
        ms?: number;
        verifyMs: number;
        keys: number;
        rssBeforeKiB: number;
        maxRssKiB: number;
      };
      if (r.ms === undefined) throw new Error(`the restore failed: ${stderr.slice(-1000)}`);
      if (r.keys !== o.keys) throw new Error(`restored ${r.keys} keys, expected ${o.keys}`);
      lines.push(
        `restore from S3 as the restore function does it, ${k.label} (zstd, ${(stored.size / MB).toFixed(0)} MiB stored; node ${nodeArgs.join(' ')}): ` +
          `${sec(r.ms)} (${k.singlePass ? 'header' : 'verify'} ${sec(r.verifyMs)}, load ${sec(r.ms - r.verifyMs)}; ` +
          `${Math.round(o.keys / (r.ms / 1000))} keys/s), native load (median) ${sec(o.nativeMs)}; ` +
          `ratio native/restore ${(o.nativeMs / r.ms).toFixed(2)}x, load alone ${(o.nativeMs / (r.ms - r.verifyMs)).toFixed(2)}x; ` +
          `RSS of the restore process ${(r.rssBeforeKiB / 1024).toFixed(0)} MiB before, ${(r.maxRssKiB / 1024).toFixed(0)} MiB at most`,
      );
      process.stderr.write(`${lines.at(-1)}\n`);
      await target.stop();
    }
    return lines;
  } finally {
    await s3.server.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
