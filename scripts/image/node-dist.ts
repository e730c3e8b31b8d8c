import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Log, run } from './exec.ts';
import type { NodeArch } from './pins.ts';

/** An npm `dist.integrity` (sha512-<base64>) of some bytes. */
export const integrityOf = (data: Buffer): string =>
  `sha512-${createHash('sha512').update(data).digest('base64')}`;

/**
 * The npm package node-linux-<arch> (the official Node build, as scripts/node24.sh fetches it),
 * kept in the download cache and used only when its bytes match the pinned integrity.
 */
export const fetchNodeTarball = async (
  o: { version: string; arch: NodeArch; integrity: string; dir: string },
  log: Log,
): Promise<string> => {
  const name = `node-linux-${o.arch}-${o.version}.tgz`;
  const file = join(o.dir, name);
  if (existsSync(file) && integrityOf(readFileSync(file)) === o.integrity) return file;
  await mkdir(o.dir, { recursive: true });
  const tmp = await mkdtemp(join(o.dir, '.download-'));
  try {
    log(`downloading node-linux-${o.arch}@${o.version} from the npm registry`);
    await run('npm', ['pack', '--silent', `node-linux-${o.arch}@${o.version}`], { cwd: tmp, retry: true });
    const got = join(tmp, name);
    if (!existsSync(got)) throw new Error(`npm pack node-linux-${o.arch}@${o.version} left no ${name}`);
    const sum = integrityOf(readFileSync(got));
    if (sum !== o.integrity) throw new Error(`${name}: integrity ${sum}, pinned ${o.integrity}; not used`);
    await rename(got, file);
    return file;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
};
