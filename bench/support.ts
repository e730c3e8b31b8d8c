import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { symlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { S3Server } from '../infra/testbed/servers/s3.ts';
import { until } from '../infra/testbed/wait.ts';
import { compileFiles, imagePathOf } from '../scripts/image/compile.ts';
import { selectImageFiles } from '../scripts/image/inputs.ts';
import { s3Store } from '../shared/s3/store.ts';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BENCH_SERVERLESS = join(root, 'bench', 'fixtures', 'serverless.yml');
/** The product's own functions. */
export const SERVERLESS = join(root, 'serverless.yml');

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export const now = () => performance.timeOrigin + performance.now();

export const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export const ms = (v: number) => `${v.toFixed(v < 10 ? 2 : 1)} ms`;

/** One function replica as its own process, as `tideway run` starts it. */
export const spawnFunction = (
  fn: string,
  env: Record<string, string>,
  serverless = BENCH_SERVERLESS,
  /** Node flags, as the supervisor gives them (nodeArgsFor). */
  nodeArgs: string[] = [],
) => {
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, join(root, 'shared', 'runtime', 'worker.ts'), fn],
    {
      env: {
        ...process.env,
        TIDEWAY_LOG_LEVEL: 'warn',
        ...env,
        TIDEWAY_SERVERLESS: serverless,
        TIDEWAY_SUPERVISOR_PID: String(process.pid),
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const exited = once(child, 'exit');
  return {
    pid: child.pid ?? 0,
    /** Peak resident set size so far, in MiB (VmHWM). */
    peakRssMiB: () => {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : Number.NaN;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
};

/** Runs `task(i)` for i in [0, n) with at most `limit` at once. */
export const pool = async (n: number, limit: number, task: (i: number) => Promise<unknown>) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
};

/** A counter's total over all its label sets, from a Prometheus text page. */
export const counterTotal = (page: string, name: string) =>
  page
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

/** Polls a function process's /metrics until `ok(page)`: how a bench knows it has settled. */
export const metricsUntil = async (
  port: number,
  what: string,
  ok: (page: string) => boolean,
  timeoutMs = 60_000,
) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await fetch(`http://127.0.0.1:${port}/metrics`)
      .then((r) => (r.ok ? r.text() : ''))
      .catch(() => '');
    if (ok(page)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** A namespace per measurement, and dropping it: only once its pods are gone (they would weigh on the next). */
export const benchNamespaces = (core: CoreV1Api) => ({
  create: async (prefix: string) => {
    const name = `${prefix}-${Date.now().toString(36)}`;
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  },
  drop: async (name: string) => {
    await core.deleteNamespace({ name });
    await until(
      `${name} empty`,
      async () => ((await core.listNamespacedPod({ namespace: name })).items.length === 0 ? true : undefined),
      300_000,
      500,
    );
  },
});

/**
 * The checkout's code as the image holds it (JavaScript, scripts/image/compile.ts) under `dir`,
 * with `extra` modules (a bench's child) beside it and the checkout's node_modules linked in: a
 * child started from there with `IMAGE_NODE_FLAGS` runs what a function's pod runs, without the
 * TypeScript stripper's memory. Returns the compiled path of each of `extra`.
 */
export const imageCode = async (dir: string, extra: readonly string[]): Promise<string[]> => {
  await compileFiles(root, [...selectImageFiles(root), ...extra], dir);
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'));
  return extra.map((f) => join(dir, imagePathOf(f)));
};

/** What the image's entrypoint adds to Node's flags (Containerfile). */
export const IMAGE_NODE_FLAGS = ['--no-experimental-strip-types'];

/** A bucket `bench` in a bench's own S3 server, and the product's store on it. */
export const benchBucket = async (s3: S3Server) => {
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
  return { bucket, store };
};
