import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureImage, imageCache, stageContext } from './build.ts';
import { ensureProdDeps } from './deps.ts';

// npm run image: builds Tideway's image with podman on a base made here (no registry needed) and
// prints the OCI archive's path on stdout; progress goes to stderr. Cached by a hash of its inputs.
// npm run image -- --context DIR: only stages the build context, for `podman build DIR` elsewhere
// (with the Containerfile's default BASE, the official Node 24 image).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (line: string) => process.stderr.write(`[image] ${line}\n`);
const { values } = parseArgs({ options: { context: { type: 'string' } } });

if (values.context) {
  const dir = resolve(values.context);
  await stageContext(root, await ensureProdDeps(root, imageCache(), log), dir);
  log(`build context in ${dir}: podman build -t tideway ${dir}`);
} else {
  const started = Date.now();
  const r = await ensureImage({ root, log });
  log(`${r.built ? 'built' : 'up to date:'} ${r.image} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.stdout.write(`${r.archive}\n`);
}
