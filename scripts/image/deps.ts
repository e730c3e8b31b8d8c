import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { type Log, run } from './exec.ts';
import { sha256 } from './key.ts';

const zEntry = z.looseObject({
  version: z.string().optional(),
  integrity: z.string().optional(),
  dev: z.boolean().optional(),
  optional: z.boolean().optional(),
  devOptional: z.boolean().optional(),
});
const zLock = z.looseObject({ packages: z.record(z.string(), zEntry) });
export type Lock = z.infer<typeof zLock>;

export const parseLock = (text: string, file: string): Lock => {
  const r = zLock.safeParse(JSON.parse(text));
  if (!r.success)
    throw new Error(`${file} is not an npm lock file (lockfileVersion 2 or 3): ${r.error.message}`);
  return r.data;
};

/**
 * Where an installed production tree (npm's node_modules/.package-lock.json) departs from the
 * lock: a dev package present, a production package missing, or another version or integrity
 * than locked. Optional packages may be missing (they are per platform). Empty: it is the lock.
 */
export const prodTreeProblems = (lock: Lock, installed: Lock): string[] => {
  const problems: string[] = [];
  for (const [path, p] of Object.entries(lock.packages)) {
    if (!path.startsWith('node_modules/')) continue;
    const got = installed.packages[path];
    if (p.dev) {
      if (got) problems.push(`${path}: a dev dependency, installed`);
    } else if (!got) {
      if (!p.optional && !p.devOptional) problems.push(`${path}: locked for production, not installed`);
    } else if (got.version !== p.version || got.integrity !== p.integrity) {
      problems.push(`${path}: installed ${got.version}, locked ${p.version} (or another integrity)`);
    }
  }
  for (const path of Object.keys(installed.packages))
    if (!lock.packages[path]) problems.push(`${path}: installed, not in the lock`);
  return problems;
};

/**
 * node_modules with the lock's production packages only, installed once per lock into the cache
 * and checked against the lock. `npm install --omit=dev` rather than `npm ci`: ci refuses this
 * lock (it lacks the dev tools' optional platform packages); the check gives what ci would.
 * No install scripts run (no production package has one).
 */
export const ensureProdDeps = async (root: string, cache: string, log: Log): Promise<string> => {
  const pkg = readFileSync(join(root, 'package.json'));
  const lockText = readFileSync(join(root, 'package-lock.json'), 'utf8');
  const dir = join(cache, 'deps', sha256(Buffer.concat([pkg, Buffer.from(lockText)])).slice(0, 16));
  const done = join(dir, '.tideway-prod-tree');
  if (existsSync(done)) return join(dir, 'node_modules');
  await mkdir(join(cache, 'deps'), { recursive: true });
  const tmp = await mkdtemp(join(cache, 'deps', '.install-'));
  try {
    await copyFile(join(root, 'package.json'), join(tmp, 'package.json'));
    await copyFile(join(root, 'package-lock.json'), join(tmp, 'package-lock.json'));
    log('installing production dependencies (npm install --omit=dev)');
    await run(
      'npm',
      ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: tmp, log, retry: true },
    );
    const installedFile = join(tmp, 'node_modules', '.package-lock.json');
    const problems = prodTreeProblems(
      parseLock(lockText, 'package-lock.json'),
      parseLock(readFileSync(installedFile, 'utf8'), installedFile),
    );
    if (problems.length > 0)
      throw new Error(`the production install departs from package-lock.json:\n  ${problems.join('\n  ')}`);
    await writeFile(join(tmp, '.tideway-prod-tree'), `${sha256(lockText)}\n`);
    // Another build may have finished the same tree meanwhile (and be linking from it): keep it.
    if (!existsSync(done)) {
      await rm(dir, { recursive: true, force: true });
      await rename(tmp, dir);
    }
    return join(dir, 'node_modules');
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
};
