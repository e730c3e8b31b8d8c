/** Where a Tideway kind lives in the API; the runtime needs it to write status and Events. */
export type ResourceType = { group: string; version: string; plural: string; kind: string };

export const TIDEWAY_GROUP = 'tideway.dev';
export const TIDEWAY_VERSION = 'v1alpha1';

export const TIDEWAY_KINDS = {
  RedisCluster: {
    group: TIDEWAY_GROUP,
    version: TIDEWAY_VERSION,
    plural: 'redisclusters',
    kind: 'RedisCluster',
  },
  EtcdCluster: {
    group: TIDEWAY_GROUP,
    version: TIDEWAY_VERSION,
    plural: 'etcdclusters',
    kind: 'EtcdCluster',
  },
  Backup: { group: TIDEWAY_GROUP, version: TIDEWAY_VERSION, plural: 'backups', kind: 'Backup' },
  BackupSchedule: {
    group: TIDEWAY_GROUP,
    version: TIDEWAY_VERSION,
    plural: 'backupschedules',
    kind: 'BackupSchedule',
  },
  Restore: { group: TIDEWAY_GROUP, version: TIDEWAY_VERSION, plural: 'restores', kind: 'Restore' },
} as const satisfies Record<string, ResourceType>;

export type ObjectKey = { namespace: string; name: string };
