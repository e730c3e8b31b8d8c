import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backoffMs } from './backoff.ts';
import { nodeArgsFor, type ServerlessConfig } from './config.ts';
import type { Logger } from './logger.ts';

// worker.ts beside this module in the checkout, worker.js in the image (its code is JavaScript).
const HERE = fileURLToPath(import.meta.url);
const WORKER = join(dirname(HERE), `worker${extname(HERE)}`);

export type Supervisor = {
  /** Running processes by `function/replica`. */
  readonly pids: () => Record<string, number>;
  /** SIGKILLs one replica (fault tests); the supervisor restarts it. */
  kill(fn: string, replica?: number): void;
  stop(): Promise<void>;
};

/**
 * `tideway run`: every function of serverless.yml (or the named ones) as separate processes,
 * `replicas` each, restarted with back-off when they crash. Stop sends SIGTERM (workers drain).
 */
export const startFunctions = (o: {
  serverlessFile: string;
  config: ServerlessConfig;
  only?: readonly string[];
  env?: Record<string, string>;
  /** More environment for one function's processes (e.g. its own KUBECONFIG). */
  envFor?: (fn: string) => Record<string, string> | undefined;
  log: Logger;
  /** Where each worker's output goes; default: inherited. */
  stdio?: 'inherit' | 'ignore';
}): Supervisor => {
  const names = o.only?.length ? o.only : Object.keys(o.config.functions);
  for (const n of names) {
    if (!o.config.functions[n]) throw new Error(`no function ${n} in ${o.serverlessFile}`);
  }
  const procs = new Map<string, ChildProcess>();
  let stopping = false;
  // The workers' grace period (worker.ts reads the same variable): they exit before it ends.
  const graceMs =
    (Number(
      o.env?.TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS ?? process.env.TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS,
    ) || 30) * 1000;

  const launch = (fn: string, replica: number, failures = 0) => {
    const id = `${fn}/${replica}`;
    // Own process group: a terminal's Ctrl-C reaches only the supervisor, which then stops the
    // workers in order instead of racing them. The IPC channel tells a worker its supervisor died.
    const child = spawn(process.execPath, [...nodeArgsFor(o.config.functions[fn] ?? {}), WORKER, fn], {
      detached: true,
      stdio: ['ignore', o.stdio ?? 'inherit', o.stdio ?? 'inherit', 'ipc'],
      env: {
        // Not a parent's IPC settings (a supervisor started by another Node program inherits them).
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('NODE_CHANNEL_'))),
        ...o.env,
        ...o.envFor?.(fn),
        TIDEWAY_SUPERVISOR_PID: String(process.pid),
        TIDEWAY_SERVERLESS: resolve(o.serverlessFile),
        TIDEWAY_REPLICA: String(replica),
      },
    });
    procs.set(id, child);
    const started = Date.now();
    child.on('exit', (code, signal) => {
      procs.delete(id);
      if (stopping) return;
      // A replica that ran a while gets a fresh back-off; one that crashes at start backs off.
      const n = Date.now() - started > 60_000 ? 0 : failures + 1;
      const delay = n === 0 ? 0 : backoffMs(n, 500, 30_000);
      o.log.warn('function exited; restarting', { function: fn, replica, code, signal, delayMs: delay });
      setTimeout(() => !stopping && launch(fn, replica, n), delay).unref();
    });
  };

  for (const fn of names) {
    const replicas = o.config.functions[fn]?.tideway.replicas ?? 1;
    for (let r = 0; r < replicas; r++) launch(fn, r);
  }

  return {
    pids: () => Object.fromEntries([...procs].map(([id, p]) => [id, p.pid ?? 0])),
    kill: (fn, replica = 0) => {
      procs.get(`${fn}/${replica}`)?.kill('SIGKILL');
    },
    stop: async () => {
      stopping = true;
      const exits = [...procs.values()].map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return;
        const gone = once(p, 'exit');
        p.kill('SIGTERM');
        // As a kubelet does: SIGKILL once the grace period is over (workers exit before it).
        const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
        await gone;
        clearTimeout(timer);
      });
      await Promise.all(exits);
    },
  };
};
