import { describe, expect, it } from 'vitest';
import type { Backup, Restore } from '../../shared/api/generated.ts';
import { isSafetyBackup, madeBy, SAFETY_LABEL, safetyBackupName, safetyBackupOf } from './safety.ts';

const restore = (name: string, uid = 'u-1'): Restore => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Restore',
  metadata: { name, namespace: 'prod', uid },
  spec: { cluster: { name: 'cache' }, source: { latest: true } },
});
const store = { s3: { bucket: 'backups', credentialsSecret: { name: 's3' } } };

describe('safety backup', () => {
  it('is <restore>-safety, a valid name also for the longest Restore names, the same every time', () => {
    expect(safetyBackupName('r1')).toBe('r1-safety');
    const long = `a${'b'.repeat(251)}c`;
    const name = safetyBackupName(long);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    expect(safetyBackupName(long)).toBe(name);
    expect(safetyBackupName(`${long.slice(0, -1)}d`)).not.toBe(name);
  });

  it('is a Backup of the cluster into the given store, labelled, naming its Restore, owned by no one', () => {
    const b = safetyBackupOf(restore('r1'), store);
    expect(b).toMatchObject({
      kind: 'Backup',
      metadata: {
        name: 'r1-safety',
        namespace: 'prod',
        labels: { [SAFETY_LABEL]: 'true' },
        annotations: { 'tideway.dev/restore': 'r1', 'tideway.dev/restore-uid': 'u-1' },
      },
      spec: { cluster: { name: 'cache' }, store },
    });
    // It must outlive the Restore: no owner reference for the garbage collector to follow.
    expect(b.metadata).not.toHaveProperty('ownerReferences');
    expect(isSafetyBackup(b as unknown as Backup)).toBe(true);
  });

  it('is told from a Backup of the same name made by an earlier Restore of that name', () => {
    const b = safetyBackupOf(restore('r1', 'u-1'), store) as unknown as Backup;
    expect(madeBy(b, restore('r1', 'u-1'))).toBe(true);
    expect(madeBy(b, restore('r1', 'u-2'))).toBe(false);
  });

  it('is never a Backup of another cluster that copied the annotations: a rollback to it would load that data', () => {
    const b = safetyBackupOf(restore('r1', 'u-1'), store) as unknown as Backup;
    expect(madeBy({ ...b, spec: { ...b.spec, cluster: { name: 'other' } } }, restore('r1', 'u-1'))).toBe(
      false,
    );
    expect(
      madeBy(
        { ...b, spec: { ...b.spec, cluster: { name: 'cache', kind: 'EtcdCluster' } } },
        restore('r1', 'u-1'),
      ),
    ).toBe(false);
    expect(
      madeBy(
        { ...b, spec: { ...b.spec, cluster: { name: 'cache', kind: 'RedisCluster' } } },
        restore('r1', 'u-1'),
      ),
    ).toBe(true);
  });
});
