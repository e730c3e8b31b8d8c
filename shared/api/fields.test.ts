import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Embedded Kubernetes types and free-form maps: passed on whole, so read as one field. */
const WHOLE = new Set([
  'resources',
  'affinity',
  'tolerations',
  'securityContext',
  'nodeSelector',
  'labels',
  'annotations',
  'config',
]);

/** Where a BackupStore (one struct) is found; its own fields are read in one place. */
const STORES = [
  'Backup.spec.store',
  'RedisCluster.spec.backup.store',
  'EtcdCluster.spec.backup.store',
  'Restore.spec.source.s3.store',
];

/** Copied whole into each Backup the schedule makes: its fields are the Backup's, read there. */
const COPIED = ['BackupSchedule.spec.template'];

/**
 * Issue 13, item 5: every field a user can set is acted on. For each field of each CRD's spec,
 * the file that reads it; the test fails on a field with no entry (a new field no code reads) and
 * on an entry whose file no longer reads it. A field refused at admission needs no reader — none
 * is today.
 */
const READERS: Record<string, string> = {
  'BackupStore.s3.bucket': 'shared/backup/store-config.ts',
  'BackupStore.s3.prefix': 'shared/backup/store-config.ts',
  'BackupStore.s3.region': 'shared/backup/store-config.ts',
  'BackupStore.s3.endpoint': 'shared/backup/store-config.ts',
  'BackupStore.s3.forcePathStyle': 'shared/backup/store-config.ts',
  'BackupStore.s3.credentialsSecret.name': 'shared/backup/store-config.ts',
  'BackupStore.s3.serverSideEncryption': 'shared/backup/store-config.ts',
  'BackupStore.compression': 'shared/backup/store-config.ts',
  'BackupStore.encryption.secretName': 'shared/backup/store-config.ts',

  'Backup.spec.cluster.name': 'functions/backup/index.ts',
  'Backup.spec.cluster.kind': 'shared/backup/cluster-ref.ts',
  'Backup.spec.store': 'functions/backup/run.ts',
  'Backup.spec.source': 'functions/backup/run.ts',
  'Backup.spec.deletionPolicy': 'functions/backup/finalize.ts',

  'BackupSchedule.spec.cluster.name': 'functions/schedule/run.ts',
  'BackupSchedule.spec.cluster.kind': 'shared/backup/cluster-ref.ts',
  'BackupSchedule.spec.schedule': 'functions/schedule/clock.ts',
  'BackupSchedule.spec.timeZone': 'functions/schedule/clock.ts',
  'BackupSchedule.spec.suspend': 'functions/schedule/tick.ts',
  'BackupSchedule.spec.concurrencyPolicy': 'functions/schedule/run.ts',
  'BackupSchedule.spec.startingDeadlineSeconds': 'functions/schedule/run.ts',
  'BackupSchedule.spec.retention.keepLast': 'shared/backup/retention.ts',
  'BackupSchedule.spec.retention.keepHourly': 'shared/backup/retention.ts',
  'BackupSchedule.spec.retention.keepDaily': 'shared/backup/retention.ts',
  'BackupSchedule.spec.retention.keepWeekly': 'shared/backup/retention.ts',
  'BackupSchedule.spec.retention.keepMonthly': 'shared/backup/retention.ts',
  'BackupSchedule.spec.retention.maxAge': 'shared/backup/retention.ts',
  'BackupSchedule.spec.template': 'functions/schedule/kube.ts',

  'RedisCluster.spec.version': 'shared/rediscluster/names.ts',
  'RedisCluster.spec.image': 'shared/rediscluster/names.ts',
  'RedisCluster.spec.replicas': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.storage.size': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.storage.storageClassName': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.resources': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.auth.secretName': 'shared/rediscluster/names.ts',
  'RedisCluster.spec.config': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.failover.enabled': 'shared/rediscluster/health.ts',
  'RedisCluster.spec.failover.after': 'shared/rediscluster/health.ts',
  'RedisCluster.spec.backup.store': 'functions/backup/targets/redis.ts',
  'EtcdCluster.spec.backup.store': 'functions/backup/targets/etcd.ts',
  'EtcdCluster.spec.bootstrap.fromBackup.name': 'functions/etcd-reconcile/from-backup.ts',
  'RedisCluster.spec.backup.maxBackupAge': 'shared/rediscluster/freshness.ts',
  'RedisCluster.spec.bootstrap.fromBackup.name': 'shared/rediscluster/bootstrap.ts',
  'RedisCluster.spec.podTemplate.labels': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.podTemplate.annotations': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.podTemplate.nodeSelector': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.podTemplate.tolerations': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.podTemplate.affinity': 'shared/rediscluster/desired.ts',
  'RedisCluster.spec.podTemplate.securityContext': 'shared/rediscluster/desired.ts',

  'EtcdCluster.spec.version': 'shared/etcdcluster/names.ts',
  'EtcdCluster.spec.image': 'shared/etcdcluster/names.ts',
  'EtcdCluster.spec.size': 'shared/etcdcluster/observe.ts',
  'EtcdCluster.spec.storage.size': 'shared/etcdcluster/desired.ts',
  'EtcdCluster.spec.storage.storageClassName': 'shared/etcdcluster/desired.ts',
  'EtcdCluster.spec.resources': 'shared/etcdcluster/desired.ts',
  'EtcdCluster.spec.defragmentation.every': 'functions/etcd-reconcile/defragment.ts',
  'EtcdCluster.spec.tls.peer.secretName': 'shared/etcdcluster/tls/sans.ts',
  'EtcdCluster.spec.tls.server.secretName': 'shared/etcdcluster/tls/sans.ts',
  'EtcdCluster.spec.tls.client.secretName': 'shared/etcdcluster/tls/sans.ts',

  'Restore.spec.cluster.name': 'functions/restore/index.ts',
  'Restore.spec.source.backup.name': 'functions/restore/source.ts',
  'Restore.spec.source.latest': 'functions/restore/source.ts',
  'Restore.spec.source.s3.store': 'functions/restore/source.ts',
  'Restore.spec.source.s3.key': 'functions/restore/source.ts',
  'Restore.spec.safetyBackup': 'functions/restore/phases.ts',
  'Restore.spec.verifyFirst': 'functions/restore/phases.ts',
};

type Schema = { properties?: Record<string, Schema> };

/** Each settable field: a leaf, a whole embedded type, or a BackupStore (checked on its own). */
const fieldsOf = (schema: Schema, path: string, out: string[]): string[] => {
  if (STORES.includes(path)) {
    out.push(path);
    fieldsOf(schema, 'BackupStore', out);
    return out;
  }
  const last = path.split('.').at(-1) ?? '';
  if (!schema.properties || WHOLE.has(last) || COPIED.includes(path)) {
    out.push(path);
    return out;
  }
  for (const [k, v] of Object.entries(schema.properties)) fieldsOf(v, `${path}.${k}`, out);
  return out;
};

const crdFields = () => {
  const all = new Set<string>();
  for (const f of readdirSync(join(root, 'crds'))) {
    const crd = parse(readFileSync(join(root, 'crds', f), 'utf8'));
    const kind = crd.spec.names.kind as string;
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec as Schema;
    for (const p of fieldsOf(spec, `${kind}.spec`, [])) all.add(p);
  }
  return all;
};

/** `file` reads property `name`: `.name`, `?.name`, by its name as a string (a table of rules), or destructures it. */
const reads = (file: string, name: string) =>
  new RegExp(`(\\?\\.|\\.)${name}\\b|'${name}'|[{,]\\s*${name}\\s*[,}=:]`).test(
    readFileSync(join(root, file), 'utf8'),
  );

describe('every field of every CRD is read by some code', () => {
  const fields = crdFields();

  it('names a reader for each field, and no field that is gone', () => {
    expect([...fields].filter((f) => !READERS[f]).sort(), 'fields with no reader').toEqual([]);
    expect(
      Object.keys(READERS)
        .filter((f) => !fields.has(f))
        .sort(),
      'readers of fields that are gone',
    ).toEqual([]);
  });

  it('finds each field read in the file named for it', () => {
    const unread = Object.entries(READERS).filter(([f, file]) => !reads(file, f.split('.').at(-1) ?? ''));
    expect(unread.map(([f, file]) => `${f} in ${file}`)).toEqual([]);
  });

  it('catches a field no code reads (the check itself)', () => {
    expect(reads('shared/rediscluster/desired.ts', 'storageClassName')).toBe(true);
    expect(reads('shared/rediscluster/desired.ts', 'noSuchFieldAnywhere')).toBe(false);
    const withExtra = fieldsOf({ properties: { extra: {}, replicas: {} } }, 'RedisCluster.spec', []);
    expect(withExtra.filter((f) => !READERS[f])).toEqual(['RedisCluster.spec.extra']);
  });
});
