import { ensureImages } from '../image-table/index.ts';
import { cacheDir } from '../paths.ts';
import { ensureDebianPackages, ensureGoBinaries, type Log } from './ensure.ts';

export type { Log } from './ensure.ts';

/** Installs or builds everything the test bed runs; cached, so a warm call takes well under a second. */
export const ensurePrerequisites = async (log: Log): Promise<void> => {
  await ensureDebianPackages(log);
  await ensureGoBinaries(log);
  await ensureImages(cacheDir(), log);
};
