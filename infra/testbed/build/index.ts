import { ensureImages } from '../image-table/index.ts';
import { cacheDir } from '../paths.ts';
import { ensureDebianPackages, ensureGoBinaries, type GoOptions, type Log } from './ensure.ts';

export { ensureKedaCrds, type GoOptions, type Log, pin } from './ensure.ts';

/**
 * Installs or builds everything the test bed runs; cached, so a warm call takes well under a second.
 * KEDA only with `keda` (slow to build; see GoOptions).
 */
export const ensurePrerequisites = async (log: Log, o: GoOptions = {}): Promise<void> => {
  await ensureDebianPackages(log);
  await ensureGoBinaries(log, o);
  await ensureImages(cacheDir(), log);
};
