import { REDISCLUSTER_CEL } from '../rediscluster/admission.ts';
import type { CelBlocks } from './cel-blocks.ts';
import { BACKUPSCHEDULE_CEL } from './schedule.ts';

/**
 * CEL rules generated from TypeScript lists, by CRD file in crds/: `npm run gen:api` writes them
 * into the files' marked blocks (fillCelBlocks), and generated.test.ts fails when they differ.
 */
export const CEL_BLOCKS: Readonly<Record<string, CelBlocks>> = {
  'backupschedule.yaml': BACKUPSCHEDULE_CEL,
  'rediscluster.yaml': REDISCLUSTER_CEL,
};
