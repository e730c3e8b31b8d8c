import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
  // The CLI's completion e2e (test/cli/completion.test.ts) drives a real zsh.
  zsh: 'zsh',
} as const;

// etcd-images: etcd, etcdctl and etcdutl at each version the node holds etcd's images of
// (image-table/etcd.ts); right after etcd, whose modules the newer one shares.
const GO_COMPONENTS = ['etcd', 'etcd-images', 'nats', 'versitygw', 'kubernetes', 'helm'] as const;

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

const here = dirname(fileURLToPath(import.meta.url));
const BUILD_GO = join(here, 'build-go.sh');

/** A version pinned in pins.sh, e.g. pin('KEDA') (the one place versions are written). */
export const pin = (name: string): string => {
  const line = readFileSync(join(here, 'pins.sh'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}_VERSION=`));
  if (!line) throw new Error(`no ${name}_VERSION in ${join(here, 'pins.sh')}`);
  return line.slice(name.length + '_VERSION='.length).trim();
};

export type GoOptions = {
  /** Also the KEDA operator (`bin/keda`), which takes minutes to build: only for who runs it. */
  keda?: boolean;
};

/** Builds (once per pin) the Go servers into the cache; see build-go.sh and pins.sh. */
export const ensureGoBinaries = async (log: Log, o: GoOptions = {}): Promise<void> => {
  for (const c of [...GO_COMPONENTS, ...(o.keda ? ['keda'] : [])]) {
    await stream('bash', [BUILD_GO, cacheDir(), c], log);
  }
};

/**
 * KEDA's CRD manifests (ScaledObject, …) at its pin, from its Go module, without building it: a
 * directory for `kubectl apply -f`. Cached.
 */
export const ensureKedaCrds = async (log: Log): Promise<string> => {
  await stream('bash', [BUILD_GO, cacheDir(), 'keda-crds'], log);
  // Where build-go.sh's keda_crds puts them.
  return join(cacheDir(), 'share', `keda-${pin('KEDA')}`, 'crds');
};
