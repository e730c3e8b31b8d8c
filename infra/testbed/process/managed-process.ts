import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { TESTBED_ENV_MARKER } from '../paths.ts';
import { ProcessStartError } from './errors.ts';

export type ProcessSpec = {
  name: string;
  command: string;
  args: readonly string[];
  /** stdout and stderr go here (appended), never to the console. */
  logFile: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Test bed id: set as an environment marker so a later start can find leftovers. */
  testbedId: string;
  /**
   * A container: its processes are one process group, signalled together, and none outlives the
   * main one — as a runtime stops a container's cgroup and the kernel ends a PID namespace with
   * its init. (A server's forks may outlive it: see the log note below.) Without this, a
   * redis-server killed mid-sync left its fork streaming the snapshot to the end.
   */
  group?: boolean;
};

export type ExitInfo = { code: number | null; signal: NodeJS.Signals | null };

export type ManagedProcess = {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the process has exited, however it ended. */
  readonly exited: Promise<ExitInfo>;
  readonly running: () => boolean;
  /** SIGTERM, then SIGKILL after graceMs. Resolves once the process is gone. */
  stop(graceMs?: number): Promise<ExitInfo>;
  kill(signal?: NodeJS.Signals): void;
};

/**
 * Starts a server as a child process that dies with us: setpriv's parent-death signal makes the
 * kernel SIGKILL it if the test bed itself is killed, so a crashed run leaves no server behind.
 */
export const startProcess = (spec: ProcessSpec): ManagedProcess => {
  const log = createWriteStream(spec.logFile, { flags: 'a' });
  const child: ChildProcess = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', spec.command, ...spec.args], {
    cwd: spec.cwd,
    // Its own process group (setpriv execs the command: the group is the command's).
    detached: spec.group === true,
    env: { ...process.env, ...spec.env, [TESTBED_ENV_MARKER]: spec.testbedId },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  log.on('error', (error) =>
    process.stderr.write(`[testbed] ${spec.name}: log ${spec.logFile}: ${error.message}\n`),
  );
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  // 'close', not 'exit': a child's own children (redis-server's fork for a replica sync) can hold
  // its stdout and write after it exited; ending the log at exit made that write crash us.
  child.once('close', () => log.end());
  if (child.pid === undefined) throw new ProcessStartError(`${spec.name}: could not spawn ${spec.command}`);

  const pid = child.pid;
  /** The process, or with `group` every process of the container. Gone already: nothing to do. */
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (spec.group) process.kill(-pid, sig);
      else child.kill(sig);
    } catch {
      // ESRCH: none left.
    }
  };
  let done = false;
  const exited = (async (): Promise<ExitInfo> => {
    const [code, sig] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    done = true;
    // A container ends with its main process: what it forked goes too.
    if (spec.group) signal('SIGKILL');
    return { code, signal: sig };
  })();

  const stop = async (graceMs = 10_000): Promise<ExitInfo> => {
    if (done) return exited;
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    name: spec.name,
    pid: child.pid,
    logFile: spec.logFile,
    exited,
    running: () => !done,
    stop,
    kill: (sig = 'SIGKILL') => {
      if (!done) signal(sig);
    },
  };
};

/** The last lines of a log, for error messages that say why a server did not come up. */
export const logTail = (logFile: string, lines = 20): string => {
  try {
    return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
};

/**
 * Polls `ready` until it resolves true; fails early with the log tail when the process exits first.
 */
export const waitReady = async (
  proc: ManagedProcess,
  ready: () => Promise<boolean>,
  { timeoutMs = 60_000, intervalMs = 100 } = {},
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!proc.running()) {
      throw new ProcessStartError(
        `${proc.name} exited before it was ready:\n${logTail(proc.logFile)}`,
        proc.logFile,
      );
    }
    if (await ready().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new ProcessStartError(
    `${proc.name} not ready after ${timeoutMs} ms:\n${logTail(proc.logFile)}`,
    proc.logFile,
  );
};
