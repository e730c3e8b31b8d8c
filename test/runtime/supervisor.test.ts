import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerless } from '../../shared/runtime/config.ts';
import { createLogger } from '../../shared/runtime/logger.ts';
import { startFunctions } from '../../shared/runtime/supervisor.ts';
import { bed, until } from '../support/bed.ts';
import { TEST_SERVERLESS } from '../support/functions.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Running (a zombie is not: this machine's init may never reap orphans). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** `tideway run` / npm start's process supervisor, with real workers on the real bus. */
describe('function supervisor', () => {
  const b = bed();
  let dir = '';
  let env: Record<string, string> = {};

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-sup-'));
    env = {
      NATS_URL: b.info.natsUrl,
      KUBECONFIG: b.info.kubeconfig,
      RECORDER_DIR: dir,
      RECORDER_NAMESPACE: 'none',
      TIDEWAY_LOG_LEVEL: 'warn',
    };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs each replica as a process, restarts a crashed one, and stops them all', async () => {
    const sup = startFunctions({
      serverlessFile: TEST_SERVERLESS,
      config: await loadServerless(TEST_SERVERLESS),
      only: ['recorder'],
      env,
      log: createLogger({}, { write: () => undefined }),
      stdio: 'ignore',
    });
    try {
      expect(Object.keys(sup.pids()).sort()).toEqual(['recorder/0', 'recorder/1']);
      const before = sup.pids()['recorder/0']!;
      sup.kill('recorder', 0);
      const after = await until(
        'a restarted replica',
        async () => {
          const pid = sup.pids()['recorder/0'];
          return pid && pid !== before ? pid : undefined;
        },
        30_000,
        100,
      );
      expect(alive(before)).toBe(false);
      expect(alive(after)).toBe(true);
    } finally {
      const pids = Object.values(sup.pids());
      await sup.stop();
      for (const pid of pids) expect(alive(pid)).toBe(false);
    }
  });

  it('takes its workers down when it dies itself, so a killed npm start leaves no orphans', async () => {
    const child = spawn(process.execPath, [join(root, 'shared', 'runtime', 'cli.ts'), 'run', 'recorder'], {
      env: { ...process.env, ...env, TIDEWAY_SERVERLESS: TEST_SERVERLESS },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = once(child, 'exit');
    const workers = () =>
      new Promise<number[]>((r) => {
        const p = spawn('pgrep', ['-P', String(child.pid)]);
        let out = '';
        p.stdout.on('data', (d: Buffer) => {
          out += d.toString();
        });
        p.on('exit', () => r(out.split('\n').filter(Boolean).map(Number)));
      });
    const pids = await until(
      'two workers',
      async () => ((await workers()).length === 2 ? workers() : undefined),
      30_000,
      200,
    );
    child.kill('SIGKILL');
    await exited;
    await until('workers gone', async () => (pids.every((p) => !alive(p)) ? true : undefined), 30_000, 200);
  });
});
