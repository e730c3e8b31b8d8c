import { describe, expect, it } from 'vitest';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import { openTimed, storeSpecOf } from './run.ts';
import type { BackupTarget, OpenedSnapshot, SnapshotSource } from './targets/types.ts';

const store = (bucket: string) => ({ s3: { bucket, credentialsSecret: { name: 's3-creds' } } });
const loaded = (spec: object, status?: object) =>
  ({
    backup: { spec: { cluster: { name: 'cache' }, ...spec }, ...(status ? { status } : {}), metadata: {} },
  }) as unknown as LoadedBackup;
const target = (defaultStore?: object) =>
  ({ ref: { kind: 'RedisCluster', name: 'cache' }, defaultStore }) as unknown as BackupTarget;

describe('the store a Backup writes to', () => {
  it('is its own, else the one an earlier attempt recorded, else its cluster’s current default', () => {
    expect(storeSpecOf(loaded({ store: store('own') }), target(store('cluster')))).toEqual(store('own'));
    // The cluster's store changed after attempt 1 wrote to old-bucket: attempt 2 (and the
    // finalizer) keep to old-bucket, so nothing it stored is left where no one looks.
    expect(storeSpecOf(loaded({}, { store: store('old-bucket') }), target(store('new-bucket')))).toEqual(
      store('old-bucket'),
    );
    expect(storeSpecOf(loaded({}), target(store('cluster')))).toEqual(store('cluster'));
    expect(() => storeSpecOf(loaded({}), target())).toThrow(expect.objectContaining({ reason: 'NoStore' }));
  });
});

describe('when a snapshot’s data is from', () => {
  it('is when it was asked for, not when it opened (a disk-based transfer opens after the BGSAVE)', async () => {
    let now = Date.parse('2026-11-27T10:00:00Z');
    const clock = () => new Date(now);
    const snap = { total: 1 } as unknown as OpenedSnapshot;
    const slow = {
      open: async () => {
        now += 4 * 60_000; // the source's BGSAVE
        return snap;
      },
    };
    const opened = await openTimed(slow, {} as SnapshotSource, new AbortController().signal, clock);
    expect(opened).toEqual({ snap, takenAt: new Date('2026-11-27T10:00:00Z') });
  });
});
