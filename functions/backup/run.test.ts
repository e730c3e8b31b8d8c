import { describe, expect, it } from 'vitest';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import { storeSpecOf } from './run.ts';
import type { BackupTarget } from './targets/types.ts';

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
