import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../paths.ts';

export type Log = (message: string) => void;

/** Debian packages the test bed needs: program → package. */
const DEBIAN = {
  iptables: 'iptables',
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  conntrack: 'conntrack',
  openssl: 'openssl',
  setpriv: 'util-linux',
  ip: 'iproute2',
  unzip: 'unzip',
} as const;

const GO_COMPONENTS = ['etcd', 'nats', 'versitygw', 'kubernetes'] as const;

const onPath = (program: string): boolean =>
  (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin')
    .split(':')
    .concat(['/usr/sbin', '/sbin'])
    .some((dir) => existsSync(join(dir, program)));

/** Runs a command with its output streamed line by line to the log (progress while building). */
const stream = (command: string, args: readonly string[], log: Log, env?: Record<string, string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    const forward = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(line);
    };
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)),
    );
  });

export const ensureDebianPackages = async (log: Log): Promise<void> => {
  const missing = [
    ...new Set(
      Object.entries(DEBIAN)
        .filter(([p]) => !onPath(p))
        .map(([, pkg]) => pkg),
    ),
  ];
  if (missing.length === 0) return;
  log(`installing Debian packages: ${missing.join(' ')}`);
  await stream('apt-get', ['update', '-qq'], log);
  await stream('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], log, {
    DEBIAN_FRONTEND: 'noninteractive',
  });
};

/** Builds (once per pin) the Go servers into the cache; see build-go.sh and pins.sh. */
export const ensureGoBinaries = async (log: Log): Promise<void> => {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'build-go.sh');
  for (const c of GO_COMPONENTS) {
    await stream('bash', [script, cacheDir(), c], log);
  }
};
