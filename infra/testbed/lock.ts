import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TESTBED_PREFIX } from './paths.ts';
import { alive } from './process/alive.ts';

/** Another test bed is running on this machine; two would fight over the bridge and routes. */
export class TestbedBusyError extends Error {
  override readonly name = 'TestbedBusyError';
  readonly retry = true;
}

const lockFile = () => join(tmpdir(), `${TESTBED_PREFIX}.lock`);

/** One test bed per machine. A lock whose owner died is taken over (its leftovers get cleaned). */
export const acquireLock = async (): Promise<() => Promise<void>> => {
  const owner = Number((await readFile(lockFile(), 'utf8').catch(() => '')).trim());
  if (owner && owner !== process.pid && alive(owner)) {
    throw new TestbedBusyError(
      `another test bed is running on this machine (pid ${owner}); stop it first (Ctrl-C on npm start, or kill ${owner})`,
    );
  }
  await writeFile(lockFile(), String(process.pid));
  return async () => {
    await rm(lockFile(), { force: true });
  };
};
