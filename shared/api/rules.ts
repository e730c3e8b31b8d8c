import { REDISCLUSTER_CEL } from '../rediscluster/admission.ts';
import { BACKUP_STORE_SCHEMA } from './backup-store.ts';
import type { CelBlocks } from './cel-blocks.ts';
import { BACKUPSCHEDULE_CEL } from './schedule.ts';

/**
 * CEL rules generated from TypeScript lists, and the BackupStore struct, by CRD file in crds/:
 * `npm run gen:api` writes them into the files' marked blocks (fillCelBlocks), and
 * generated.test.ts fails when they differ.
 */
export const CEL_BLOCKS: Readonly<Record<string, CelBlocks>> = {
  'backup.yaml': { store: BACKUP_STORE_SCHEMA },
  'backupschedule.yaml': { ...BACKUPSCHEDULE_CEL, store: BACKUP_STORE_SCHEMA },
  'etcdcluster.yaml': { store: BACKUP_STORE_SCHEMA },
  'rediscluster.yaml': { ...REDISCLUSTER_CEL, store: BACKUP_STORE_SCHEMA },
  'restore.yaml': { store: BACKUP_STORE_SCHEMA },
};
