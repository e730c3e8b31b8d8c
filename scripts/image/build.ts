import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheDir } from '../../infra/testbed/paths.ts';
import { baseKeyOf, ensureBase, resolveBasePins } from './base.ts';
import { compileFiles } from './compile.ts';
import { ensureProdDeps } from './deps.ts';
import { type Log, run } from './exec.ts';
import { selectImageFiles } from './inputs.ts';
import { imageParts, keyOf } from './key.ts';
import { ensurePodman, type Podman, podmanCli } from './podman.ts';

export const IMAGE_REPO = 'localhost/tideway';

/** Where images, the base's downloads and production node_modules are kept (outside the clone). */
export const imageCache = (): string => join(cacheDir(), 'images', 'tideway');

/** How many archives (one per key) are kept; older ones are deleted after a build. */
const KEEP_ARCHIVES = 3;

export type BuiltImage = {
  /** The OCI archive (`podman save --format oci-archive`). */
  archive: string;
  /** Its reference, also in the archive's index.json (org.opencontainers.image.ref.name). */
  image: string;
  /** Hash of every input: base pins and recipe, Containerfile, lock, the files that go in. */
  key: string;
  /** False: the archive of this key was there already. */
  built: boolean;
};

export const archiveOf = (cache: string, key: string) => join(cache, `tideway-${key.slice(0, 12)}.oci.tar`);

/**
 * A build context laid out like the checkout: the Containerfile, .containerignore, the function
 * table, the code trees as JavaScript, no tests (compile.ts) and production node_modules (hard
 * links into the cache where the file system allows).
 */
export const stageContext = async (root: string, nodeModules: string, dir: string): Promise<void> => {
  await mkdir(dir, { recursive: true });
  for (const f of ['Containerfile', '.containerignore']) await copyFile(join(root, f), join(dir, f));
  await compileFiles(root, selectImageFiles(root), dir);
  await run('cp', ['-al', nodeModules, join(dir, 'node_modules')]).catch(() =>
    run('cp', ['-a', nodeModules, join(dir, 'node_modules')]),
  );
};

const keepNewest = async (dir: string, match: RegExp, keep: number, log: Log) => {
  const names = (await readdir(dir)).filter((n) => match.test(n));
  const dated = await Promise.all(names.map(async (n) => ({ n, t: (await stat(join(dir, n))).mtimeMs })));
  for (const { n } of dated.sort((a, b) => b.t - a.t).slice(keep)) {
    log(`removing the old ${n}`);
    await rm(join(dir, n), { recursive: true, force: true });
  }
};

/**
 * `npm run image`: the image of this checkout as an OCI archive, built only when no archive of
 * its key exists. The key is computed first (cheap: hashes and `apt-cache show`), so an
 * unchanged checkout costs no build.
 */
export const ensureImage = async (o: {
  root: string;
  log: Log;
  cache?: string;
  podman?: Podman;
}): Promise<BuiltImage> => {
  const cache = o.cache ?? imageCache();
  const pins = await resolveBasePins(o.root, cache, o.log);
  const key = keyOf(imageParts(o.root, baseKeyOf(o.root, pins)));
  const image = `${IMAGE_REPO}:${key.slice(0, 12)}`;
  const archive = archiveOf(cache, key);
  if (existsSync(archive)) return { archive, image, key, built: false };

  await ensurePodman(o.log);
  const podman = o.podman ?? podmanCli(o.log);
  await mkdir(cache, { recursive: true });
  const base = await ensureBase({ pins, key: baseKeyOf(o.root, pins), cache, podman, log: o.log });
  const nodeModules = await ensureProdDeps(o.root, cache, o.log);
  const context = await mkdtemp(join(cache, '.context-'));
  try {
    await stageContext(o.root, nodeModules, context);
    o.log(`building ${image} on ${base}`);
    await podman.build({
      context,
      file: join(context, 'Containerfile'),
      tag: image,
      buildArgs: { BASE: base },
    });
    const partial = `${archive}.${process.pid}.partial`;
    await podman.saveOciArchive(image, partial);
    await rename(partial, archive);
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  // The archive is the cache; local storage keeps only the newest image (and its layers).
  for (const old of await podman.tags(IMAGE_REPO)) if (old !== image) await podman.remove(old);
  await keepNewest(cache, /^tideway-[0-9a-f]{12}\.oci\.tar$/, KEEP_ARCHIVES, o.log);
  await keepNewest(join(cache, 'deps'), /^[0-9a-f]{16}$/, 2, o.log);
  return { archive, image, key, built: true };
};
