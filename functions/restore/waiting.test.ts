import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { Restore } from '../../shared/api/generated.ts';
import { clusterLockKey } from '../../shared/events/cluster-lock-key.ts';
import { waitsFor } from './waiting.ts';

const restore = {
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Restore',
  metadata: { name: 'r1', namespace: 'prod', uid: 'u-r1' },
  spec: { cluster: { name: 'main' }, source: { backup: { name: 'b1' } } },
  status: {
    phase: 'SafetyBackup',
    safetyBackup: 'r1-safety',
    conditions: [{ type: 'Completed', status: 'False', reason: 'SafetyBackup', message: 'waiting' }],
  },
} as unknown as Restore;

/** The lock a Backup's outcome event gives its run, as the backup function publishes it. */
const lockOf = (backup: { name: string; cluster: string; clusterkind?: string }) =>
  clusterLockKey(
    new CloudEvent({
      type: 'dev.tideway.backup.completed',
      source: '/t',
      kind: 'Backup',
      namespace: 'prod',
      name: backup.name,
      cluster: backup.cluster,
      ...(backup.clusterkind ? { clusterkind: backup.clusterkind } : {}),
    }),
  );

describe('waitsFor', () => {
  it('runs the Restore on its own safety backup’s outcome, under the lock its own runs take', () => {
    const own = { name: 'r1-safety', cluster: 'main', clusterkind: 'RedisCluster' };
    expect(waitsFor({ uid: 'u-r1', backup: 'r1-safety', lock: lockOf(own) }, restore)).toBe(true);
    // Outcomes published before they carried clusterkind: the default kind, the same lock.
    expect(
      waitsFor({ uid: 'u-r1', backup: 'r1-safety', lock: lockOf({ ...own, clusterkind: '' }) }, restore),
    ).toBe(true);
  });

  it('never on a Backup that only claims to be it: another cluster (another lock), another name, another uid', () => {
    // A Backup of cluster `other` annotated with r1's name and uid: its run would lock `other`
    // while r1's own runs lock `main` — two loads into one master at once.
    const forged = { uid: 'u-r1', backup: 'r1-safety' };
    expect(waitsFor({ ...forged, lock: lockOf({ name: 'r1-safety', cluster: 'other' }) }, restore)).toBe(
      false,
    );
    expect(
      waitsFor(
        { ...forged, lock: lockOf({ name: 'r1-safety', cluster: 'main', clusterkind: 'EtcdCluster' }) },
        restore,
      ),
    ).toBe(false);
    const lock = lockOf({ name: 'x', cluster: 'main' });
    expect(waitsFor({ uid: 'u-r1', backup: 'copied', lock }, restore)).toBe(false);
    expect(waitsFor({ uid: 'u-earlier', backup: 'r1-safety', lock }, restore)).toBe(false);
    // Before the Restore recorded a safety backup, nothing is waited for.
    const early = { ...restore, status: { phase: 'Verifying' } } as unknown as Restore;
    expect(waitsFor({ uid: 'u-r1', backup: 'r1-safety', lock }, early)).toBe(false);
  });

  it('never a Restore gone on to load', () => {
    const lock = lockOf({ name: 'r1-safety', cluster: 'main', clusterkind: 'RedisCluster' });
    const w = { uid: 'u-r1', backup: 'r1-safety', lock };
    const loading = {
      ...restore,
      status: {
        ...restore.status,
        phase: 'Restoring',
        conditions: [{ type: 'Completed', status: 'False', reason: 'Restoring', message: 'loading' }],
      },
    } as unknown as Restore;
    expect(waitsFor(w, loading)).toBe(false);
    expect(waitsFor(w, restore)).toBe(true);
  });
});
