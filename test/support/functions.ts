import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const TEST_SERVERLESS = join(root, 'test', 'fixtures', 'serverless.yml');

export type Worker = {
  readonly pid: number;
  /** SIGKILL: a crash, no graceful release of anything. */
  kill(): Promise<void>;
  /** SIGTERM and wait: a graceful stop. */
  stop(): Promise<void>;
  readonly output: () => string;
  /** null while it runs. */
  readonly exitCode: () => number | null;
};

/** One replica of a function as its own process, as `tideway run` would start it. */
export const spawnWorker = (
  fn: string,
  env: Record<string, string>,
  serverless = TEST_SERVERLESS,
): Worker => {
  const child: ChildProcess = spawn(process.execPath, [join(root, 'shared', 'runtime', 'worker.ts'), fn], {
    env: {
      ...process.env,
      TIDEWAY_LOG_LEVEL: 'warn',
      ...env,
      TIDEWAY_SERVERLESS: serverless,
      // The test process is its supervisor: a worker a crashed or timed-out test run leaves
      // behind stops by itself instead of consuming the next test's events.
      TIDEWAY_SUPERVISOR_PID: String(process.pid),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = once(child, 'exit');
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    pid: child.pid ?? 0,
    kill: async () => {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (alive()) child.kill('SIGTERM');
      await exited;
    },
    output: () => output,
    exitCode: () => child.exitCode,
  };
};

export type Record_ = {
  pid: number;
  id: string;
  type: string;
  name: string;
  generation?: string;
  attempt: number;
  overlap: boolean;
  started: number;
  ended: number;
  observed?: number;
  gone?: boolean;
  mode?: string;
};

export const readRecords = (dir: string): Record_[] => {
  const file = join(dir, 'events.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record_);
};

/** On a failed test, what the functions logged: the steps they took and why they waited. */
export const logsOnFailure = (workers: () => readonly Worker[]) => {
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      for (const w of workers())
        process.stderr.write(`--- function ${w.pid} ---\n${w.output().slice(-20_000)}\n`);
    });
  });
};
