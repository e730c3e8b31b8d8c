import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';

// What the guide's test offers as Tideway's next version: its image under a new tag, and its chart
// with a CRD that changed. Both are the checkout's own, so the upgrade exercises the roll to a new
// image reference and the take-over of changed CRDs, not new code.

const run = promisify(execFile);
const zIndex = z.looseObject({
  manifests: z.array(z.looseObject({ annotations: z.record(z.string(), z.string()).optional() })).min(1),
});

/** Removes `dir` when `make` fails, so that nothing half-made is left. */
const inTempDir = async (prefix: string, make: (dir: string) => Promise<void>): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    await make(dir);
    return dir;
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
};

/**
 * Like `docker tag` then `kind load image-archive`: a copy of an OCI archive whose index names the
 * image `ref` — the same manifest, so the same digest. Returns a new directory holding it, for
 * `startTestbed({ imageArchiveDirs })`; the caller removes it.
 */
export const retagArchive = (archive: string, ref: string): Promise<string> =>
  inTempDir('tideway-guide-images-', async (dir) => {
    const tree = join(dir, 'tree');
    await mkdir(tree);
    await run('tar', ['-xf', archive, '-C', tree]);
    const index = zIndex.parse(JSON.parse(await readFile(join(tree, 'index.json'), 'utf8')));
    for (const m of index.manifests)
      m.annotations = { ...m.annotations, 'org.opencontainers.image.ref.name': ref };
    await writeFile(join(tree, 'index.json'), JSON.stringify(index));
    // The members in the archive's own order (oci-layout included).
    const members = (await run('tar', ['-tf', archive])).stdout.split('\n').filter(Boolean);
    await run('tar', ['-cf', join(dir, 'retagged.oci.tar'), '--no-recursion', '-C', tree, ...members]);
    await rm(tree, { recursive: true, force: true });
  });

/** The description the next chart gives RedisClusters, to tell its CRD from the installed one. */
export const NEXT_DESCRIPTION = 'A replicated Redis (the next version of its CRD).';

/**
 * A copy of `chart` whose RedisCluster CRD has another description, as a next version's CRDs
 * differ. Returns the copy's directory (the chart is at its root); the caller removes it.
 */
export const nextChart = (chart: string): Promise<string> =>
  inTempDir('tideway-guide-chart-', async (dir) => {
    await cp(chart, dir, { recursive: true });
    const file = join(dir, 'crds', 'rediscluster.yaml');
    const crd = await readFile(file, 'utf8');
    const changed = crd.replace(/^( +description: )"A replicated Redis:.*"$/m, `$1"${NEXT_DESCRIPTION}"`);
    if (changed === crd) throw new Error(`${file}: no RedisCluster description to change`);
    await writeFile(file, changed);
  });
