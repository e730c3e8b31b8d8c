import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { backupKeys } from '../../shared/backup/manifest.ts';
import { SAFETY_LABEL } from './safety.ts';
import {
  checkRedisBackup,
  decryptionSecret,
  deletedBefore,
  describeRef,
  keyOfLocation,
  manifestKeyOf,
  pickLatest,
  resolveSource,
  s3KeyOf,
} from './source.ts';

const backup = (
  name: string,
  o: {
    cluster?: string;
    kind?: 'EtcdCluster';
    phase?: string;
    completedAt?: string;
    takenAt?: string;
    created?: string;
    safety?: boolean;
  } = {},
): Backup => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Backup',
  metadata: {
    name,
    creationTimestamp: o.created ?? '2026-11-20T00:00:00Z',
    ...(o.safety ? { labels: { [SAFETY_LABEL]: 'true' } } : {}),
  },
  spec: { cluster: { name: o.cluster ?? 'cache', ...(o.kind ? { kind: o.kind } : {}) } },
  status: {
    phase: (o.phase ?? 'Completed') as 'Completed',
    ...(o.completedAt ? { completedAt: o.completedAt } : {}),
    ...(o.takenAt ? { takenAt: o.takenAt } : {}),
  },
});

const cache = { kind: 'RedisCluster', name: 'cache' } as const;

describe('latest: true', () => {
  it('is the newest Completed Backup of the cluster (without takenAt: by completion)', () => {
    const list = [
      backup('old', { completedAt: '2026-11-20T01:00:00Z' }),
      // Created before mid, finished after it (a long one).
      backup('new', { completedAt: '2026-11-21T01:00:00Z', created: '2026-11-20T02:00:00Z' }),
      backup('mid', { completedAt: '2026-11-20T12:00:00Z', created: '2026-11-20T03:00:00Z' }),
    ];
    expect(pickLatest(list, cache)?.metadata.name).toBe('new');
  });

  it('believes no time over a day after its object existed: a node clock a year ahead makes no Backup newest for good', () => {
    const list = [
      backup('real', { takenAt: '2026-11-21T00:00:00Z', created: '2026-11-21T00:00:00Z' }),
      backup('skewed', { takenAt: '2027-11-20T01:00:00Z', created: '2026-11-20T01:00:00Z' }),
    ];
    // skewed counts as taken when it was made (11-20).
    expect(pickLatest(list, cache)?.metadata.name).toBe('real');
  });

  it('is the one with the newest data: a backup that finished last may have been taken first', () => {
    const list = [
      backup('long', {
        takenAt: '2026-11-21T00:00:00Z',
        completedAt: '2026-11-21T03:00:00Z',
        created: '2026-11-20T23:59:00Z',
      }),
      backup('short', {
        takenAt: '2026-11-21T01:00:00Z',
        completedAt: '2026-11-21T01:10:00Z',
        created: '2026-11-21T00:59:00Z',
      }),
    ];
    expect(pickLatest(list, cache)?.metadata.name).toBe('short');
  });

  it('skips other clusters, unfinished and failed backups, safety backups of restores, and Backups being deleted', () => {
    const list = [
      backup('mine', { completedAt: '2026-11-20T01:00:00Z' }),
      backup('other-cluster', { cluster: 'other', completedAt: '2026-11-22T00:00:00Z' }),
      backup('etcd-namesake', { kind: 'EtcdCluster', completedAt: '2026-11-23T00:00:00Z' }),
      backup('running', { phase: 'Running', completedAt: '2026-11-22T00:00:00Z' }),
      backup('failed', { phase: 'Failed', completedAt: '2026-11-22T00:00:00Z' }),
      backup('r1-safety', { safety: true, completedAt: '2026-11-22T00:00:00Z' }),
      {
        ...backup('being-deleted', { completedAt: '2026-11-22T00:00:00Z' }),
        metadata: { ...backup('being-deleted', {}).metadata, deletionTimestamp: '2026-11-22T01:00:00Z' },
      },
    ];
    expect(pickLatest(list, cache)?.metadata.name).toBe('mine');
    expect(pickLatest(list.slice(1), cache)).toBeUndefined();
  });

  it('picks the same one every time on equal completion times', () => {
    const at = '2026-11-20T01:00:00Z';
    const a = [backup('a', { completedAt: at }), backup('b', { completedAt: at })];
    expect(pickLatest(a, cache)?.metadata.name).toBe(pickLatest([...a].reverse(), cache)?.metadata.name);
  });
});

describe('object keys', () => {
  it('finds the manifest beside every kind of object the backup function writes', () => {
    // An EtcdCluster's too: its manifest says what it is, so a Restore refuses it for that reason.
    for (const kind of ['RedisCluster', 'EtcdCluster'] as const)
      for (const compression of ['zstd', 'gzip', 'none'] as const)
        for (const encrypted of [true, false]) {
          const k = backupKeys({
            prefix: 'p/q',
            namespace: 'prod',
            cluster: 'cache',
            backup: 'nightly.rdb',
            uid: '0123456789',
            compression,
            encrypted,
            kind,
          });
          expect(manifestKeyOf(k.object)).toBe(k.manifest);
        }
  });

  it('reads a location only in the store bucket', () => {
    expect(keyOfLocation('s3://backups/a/b.rdb.zst', 'backups')).toBe('a/b.rdb.zst');
    expect(keyOfLocation('s3://other/a/b.rdb.zst', 'backups')).toBeUndefined();
    expect(keyOfLocation('s3://backups/', 'backups')).toBeUndefined();
  });

  it('takes an S3 key under the store prefix, unless it already starts with it', () => {
    expect(s3KeyOf('', 'a/b.rdb')).toBe('a/b.rdb');
    expect(s3KeyOf(undefined, 'a/b.rdb')).toBe('a/b.rdb');
    expect(s3KeyOf('team', 'a/b.rdb')).toBe('team/a/b.rdb');
    expect(s3KeyOf('team/', '/a/b.rdb')).toBe('team/a/b.rdb');
    expect(s3KeyOf('team', 'team/a/b.rdb')).toBe('team/a/b.rdb');
    // A key that merely starts with the same letters is not under the prefix.
    expect(s3KeyOf('team', 'teamwork/b.rdb')).toBe('team/teamwork/b.rdb');
  });

  it('says in words what is restored', () => {
    const r = (source: Restore['spec']['source']) =>
      ({ metadata: { name: 'r' }, spec: { cluster: { name: 'c' }, source } }) as Restore;
    expect(describeRef({ kind: 'backup', name: 'b1', uid: 'u' }, r({ backup: { name: 'b1' } }))).toBe(
      'backup b1',
    );
    expect(describeRef({ kind: 'backup', name: 'b1', uid: 'u' }, r({ latest: true }))).toBe(
      'backup b1 (latest)',
    );
    expect(
      describeRef(
        { kind: 's3', key: 'x/y.rdb' },
        r({ s3: { key: 'x/y.rdb', store: { s3: { bucket: 'bk', credentialsSecret: { name: 's' } } } } }),
      ),
    ).toBe('s3://bk/x/y.rdb');
  });
});

describe('what a Restore loads', () => {
  it('is a RedisCluster’s backup: an EtcdCluster’s is refused for good, by its Backup or its manifest', () => {
    expect(() => checkRedisBackup({ name: 'cache' }, 'Backup b')).not.toThrow();
    expect(() => checkRedisBackup({ kind: 'RedisCluster', name: 'cache' }, 'Backup b')).not.toThrow();
    const refused = (() => {
      try {
        checkRedisBackup({ kind: 'EtcdCluster', name: 'cache' }, 's3://bk/x.db');
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toMatchObject({ reason: 'WrongClusterKind', retry: false });
    expect(String((refused as Error).message)).toMatch(/s3:\/\/bk\/x\.db is a backup of EtcdCluster cache/);
  });
});

describe('decryption', () => {
  const url = 's3://b/prod/cache/nightly.rdb.zst.enc';
  const encrypted = { secretName: 'backup-key' };
  it('decrypts what the manifest says is encrypted, with the user’s Secret first', () => {
    expect(decryptionSecret({ wanted: '', manifest: encrypted, pinned: false, url })).toBe('backup-key');
    expect(decryptionSecret({ wanted: 'mine', manifest: encrypted, pinned: false, url })).toBe('mine');
    expect(decryptionSecret({ wanted: '', manifest: null, pinned: false, url })).toBe('');
  });

  it('refuses a raw key whose manifest turns off the encryption the store asks for', () => {
    expect(() => decryptionSecret({ wanted: 'backup-key', manifest: null, pinned: false, url })).toThrow(
      expect.objectContaining({ reason: 'EncryptionMismatch', retry: false }),
    );
    // A Backup's own object, its checksum recorded in its status when it was stored plain (the
    // store got encryption later), restores as it was stored.
    expect(decryptionSecret({ wanted: 'backup-key', manifest: null, pinned: true, url })).toBe('');
  });
});

describe('deletedBefore', () => {
  const backup = (deletionTimestamp?: string) =>
    ({ metadata: { name: 'b1', ...(deletionTimestamp ? { deletionTimestamp } : {}) } }) as Backup;
  const restore = (creationTimestamp: string) => ({ metadata: { name: 'r1', creationTimestamp } }) as Restore;

  it('refuses only a Restore made after the Backup was deleted: one made before is what the finalizer keeps it for', () => {
    expect(deletedBefore(backup('2026-11-27T18:00:00Z'), restore('2026-11-27T18:00:01Z'))).toBe(true);
    // Named before the deletion, still Pending: the Backup waits for it (InUse), so it must load.
    expect(deletedBefore(backup('2026-11-27T18:00:01Z'), restore('2026-11-27T18:00:00Z'))).toBe(false);
    expect(deletedBefore(backup('2026-11-27T18:00:00Z'), restore('2026-11-27T18:00:00Z'))).toBe(false);
    expect(deletedBefore(backup(), restore('2026-11-27T18:00:00Z'))).toBe(false);
  });
});

describe('a recorded Backup', () => {
  it('is that very Backup: one made again under its name since is refused for good', async () => {
    const again = {
      ...backup('r1-safety'),
      metadata: { name: 'r1-safety', namespace: 'prod', uid: 'u-new' },
    };
    const kube = {
      makeApiClient: () => ({
        getNamespacedCustomObject: async (a: { plural: string; name: string }) => {
          if (a.plural === 'backups' && a.name === 'r1-safety') return structuredClone(again);
          throw Object.assign(new Error('not found'), { code: 404 });
        },
      }),
    } as unknown as KubeConfig;
    const restore = {
      metadata: { name: 'r1', namespace: 'prod' },
      spec: { cluster: { name: 'cache' }, source: { backup: { name: 'b1' } } },
    } as unknown as Restore;
    await expect(
      resolveSource(kube, restore, { kind: 'backup', name: 'r1-safety', uid: 'u-s' }),
    ).rejects.toMatchObject({
      reason: 'BackupNotFound',
      retry: false,
      message: expect.stringMatching(/was deleted and created again/),
    });
  });
});
