import { existsSync } from 'node:fs';
import { type Log, run } from './exec.ts';

/** The container tool the image is built with: the few operations the build needs. */
export type Podman = {
  exists(ref: string): Promise<boolean>;
  /** COPY/ADD-only builds (nothing runs), with a fixed timestamp so equal inputs give equal images. */
  build(o: { context: string; file: string; tag: string; buildArgs?: Record<string, string> }): Promise<void>;
  /** Writes the image as an OCI archive (index.json → manifest → config and layer blobs). */
  saveOciArchive(ref: string, archive: string): Promise<void>;
  /** Image references (repo:tag) in local storage whose repository is `repo`. */
  tags(repo: string): Promise<string[]>;
  remove(ref: string): Promise<void>;
};

const onPath = (program: string) =>
  (process.env.PATH ?? '').split(':').some((d) => d && existsSync(`${d}/${program}`));

/** Debian's podman, installed when missing (the machines here are Debian and run as root). */
export const ensurePodman = async (log: Log): Promise<void> => {
  if (onPath('podman')) return;
  if (process.getuid?.() !== 0)
    throw new Error('podman is not installed; install it (Debian: apt-get install podman) and run again');
  log('installing podman (Debian)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { log, env, retry: true });
  await run('apt-get', ['install', '-y', '-qq', 'podman'], { log, env, retry: true });
};

export const podmanCli = (log: Log): Podman => ({
  exists: async (ref) => (await run('podman', ['image', 'exists', ref], { okCodes: [1] })).code === 0,
  build: async (o) => {
    await run(
      'podman',
      [
        'build',
        // The base is local; never ask a registry.
        '--pull=never',
        '--timestamp=0',
        ...Object.entries(o.buildArgs ?? {}).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
        '--file',
        o.file,
        '--tag',
        o.tag,
        o.context,
      ],
      { log },
    );
  },
  saveOciArchive: async (ref, archive) => {
    await run('podman', ['save', '--quiet', '--format', 'oci-archive', '--output', archive, ref], { log });
  },
  tags: async (repo) => {
    const r = await run('podman', [
      'images',
      '--format',
      '{{.Repository}}:{{.Tag}}',
      '--filter',
      `reference=${repo}`,
    ]);
    return r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith(`${repo}:`));
  },
  remove: async (ref) => {
    await run('podman', ['rmi', ref], { log, okCodes: [1, 2] });
  },
});
