import { mkdir, rm, symlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envVars, removeEnvFile, writeEnvFile } from './env-file.ts';
import { loadedImagesDir } from './image-table/index.ts';
import { loadImageArchive } from './image-table/load.ts';
import { cacheDir } from './paths.ts';
import { startTestbed } from './testbed.ts';

/**
 * `.tideway/local/bin`: the `tideway` CLI, also as `kubectl-tideway` so that kubectl finds it as
 * the plugin `kubectl tideway`, as `npm install -g` would link them (package.json's bin).
 */
const linkCli = async (root: string): Promise<string> => {
  const dir = join(root, '.tideway', 'local', 'bin');
  await mkdir(dir, { recursive: true });
  for (const name of ['tideway', 'kubectl-tideway']) {
    await rm(join(dir, name), { force: true });
    await symlink(join(root, 'cli', 'tideway'), join(dir, name));
  }
  return dir;
};

/**
 * Runs the test bed in the foreground until Ctrl-C or SIGTERM, with `.tideway/local/env` written
 * once it is ready and removed at stop. `npm start` adds Tideway's functions on top.
 */
export const runTestbedForeground = async (opts: {
  root: string;
  onReady?: (bed: Awaited<ReturnType<typeof startTestbed>>) => Promise<Record<string, string>>;
  /** Runs first at stop (before the test bed goes): stop what onReady started. */
  onStop?: () => Promise<void>;
}) => {
  const log = (msg: string) => process.stderr.write(`${msg}\n`);
  const envFile = join(opts.root, '.tideway', 'local', 'env');
  const bed = await startTestbed({ log });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`[tideway] ${signal}: stopping`);
    await removeEnvFile(envFile);
    await rm(join(opts.root, '.tideway', 'local', 'bin'), { recursive: true, force: true });
    const stopAt = Date.now();
    await opts.onStop?.().catch((error: unknown) => log(`[tideway] stop: ${String(error)}`));
    const bedAt = Date.now();
    await bed.stop();
    log(
      `[tideway] stop took ${((bedAt - stopAt) / 1000).toFixed(1)} s, the test bed ${((Date.now() - bedAt) / 1000).toFixed(1)} s`,
    );
    log('[tideway] stopped; nothing left behind');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    const extra = (await opts.onReady?.(bed)) ?? {};
    const cliDir = await linkCli(opts.root);
    await writeEnvFile(envFile, envVars(bed, extra), `${cliDir}:${dirname(bed.kubectl)}`);
  } catch (error) {
    log(`[tideway] start failed: ${error instanceof Error ? error.message : String(error)}`);
    await shutdown('error');
    process.exitCode = 1;
    return;
  }
  log(`[tideway] ready. In another shell: source ${envFile} && kubectl get nodes`);
};

/**
 * `npm run testbed -- load-image <archive>`: like `kind load image-archive`, gives the node an
 * OCI archive; pods naming its image run it from then on (the test bed may be running).
 */
const loadImage = async (archive: string | undefined) => {
  if (!archive) {
    process.stderr.write('usage: npm run testbed -- load-image <oci-archive>\n');
    process.exitCode = 64;
    return;
  }
  try {
    const refs = await loadImageArchive(resolve(archive), loadedImagesDir(cacheDir()));
    process.stdout.write(`${refs.map((r) => `loaded ${r}`).join('\n')}\n`);
  } catch (error) {
    process.stderr.write(`load-image: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === 'load-image') await loadImage(process.argv[3]);
  else await runTestbedForeground({ root: resolve(dirname(fileURLToPath(import.meta.url)), '..', '..') });
}
