import { describe, expect, it } from 'vitest';
import type { Backup } from '../../shared/api/generated.ts';
import { type OwnedBackup, ownedBackupOf, readyCondition, retentionCondition, summarize } from './summary.ts';

const owned = (name: string, phase: OwnedBackup['phase'], at: string, deleting = false): OwnedBackup => ({
  name,
  uid: `uid-${name}`,
  phase,
  takenAt: new Date(at),
  deleting,
  cluster: 'RedisCluster/cache',
});

describe('ownedBackupOf', () => {
  const backup = (status: Backup['status'], annotations?: Record<string, string>): Backup => ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: {
      name: 'b',
      uid: 'u',
      creationTimestamp: '2026-11-22T03:00:02Z',
      ...(annotations ? { annotations } : {}),
    },
    spec: { cluster: { name: 'cache' } },
    ...(status ? { status } : {}),
  });

  it('dates a backup by when its data was taken, then by its run, then by its creation', () => {
    expect(
      ownedBackupOf(
        backup({
          phase: 'Completed',
          startedAt: '2026-11-22T03:00:05Z',
          completedAt: '2026-11-22T03:10:00Z',
        }),
      ).takenAt,
    ).toEqual(new Date('2026-11-22T03:00:05Z'));
    // The snapshot's own time first: a source lost mid-stream made it later than the start.
    expect(
      ownedBackupOf(
        backup({
          phase: 'Completed',
          startedAt: '2026-11-22T03:00:05Z',
          takenAt: '2026-11-22T03:04:00Z',
          completedAt: '2026-11-22T03:10:00Z',
        }),
      ).takenAt,
    ).toEqual(new Date('2026-11-22T03:04:00Z'));
    expect(
      ownedBackupOf(backup(undefined, { 'tideway.dev/scheduled-time': '2026-11-22T03:00:00Z' })).takenAt,
    ).toEqual(new Date('2026-11-22T03:00:00Z'));
    expect(ownedBackupOf(backup(undefined)).takenAt).toEqual(new Date('2026-11-22T03:00:02Z'));
    expect(ownedBackupOf(backup(undefined)).phase).toBeUndefined();
  });
});

describe('summarize', () => {
  it('lists unfinished Backups oldest first and names the newest Completed one', () => {
    const s = summarize([
      owned('c1', 'Completed', '2026-11-20T03:00:00Z'),
      owned('c2', 'Completed', '2026-11-21T03:00:00Z'),
      owned('f', 'Failed', '2026-11-22T03:00:00Z'),
      owned('r', 'Running', '2026-11-23T03:00:00Z'),
      owned('new', undefined, '2026-11-24T03:00:00Z'),
      owned('p', 'Pending', '2026-11-22T12:00:00Z'),
    ]);
    expect(s).toEqual({ active: ['p', 'r', 'new'], lastSuccessfulBackup: 'c2' });
  });

  it('leaves out Backups being deleted (a replaced one, a pruned one)', () => {
    const s = summarize([
      owned('c1', 'Completed', '2026-11-20T03:00:00Z'),
      owned('c2', 'Completed', '2026-11-21T03:00:00Z', true),
      owned('r', 'Running', '2026-11-23T03:00:00Z', true),
    ]);
    expect(s).toEqual({ active: [], lastSuccessfulBackup: 'c1' });
    expect(summarize([])).toEqual({ active: [], lastSuccessfulBackup: undefined });
  });
});

describe('readyCondition', () => {
  const base = {
    spec: { schedule: '0 3 * * *', cluster: { name: 'cache' }, suspend: false },
    namespace: 'ns',
    next: new Date('2026-11-23T02:00:00Z'),
    timeZone: 'Europe/Berlin',
    clusterExists: true,
  };
  it('says when the next run is, or why there is none and what to change', () => {
    expect(readyCondition(base)).toMatchObject({ status: 'True', reason: 'Scheduled' });
    expect(readyCondition(base).message).toContain('2026-11-23T02:00:00.000Z');
    expect(readyCondition({ ...base, spec: { ...base.spec, suspend: true } })).toMatchObject({
      status: 'False',
      reason: 'Suspended',
    });
    expect(readyCondition({ ...base, clusterExists: false })).toMatchObject({
      status: 'False',
      reason: 'ClusterNotFound',
      message: expect.stringContaining('RedisCluster cache does not exist in namespace ns'),
    });
    expect(readyCondition({ ...base, next: 'never' })).toMatchObject({
      status: 'False',
      reason: 'NeverFires',
    });
    // A broken schedule is reported before anything else.
    expect(
      readyCondition({
        ...base,
        clusterExists: false,
        clockProblem: { reason: 'InvalidTimeZone', message: 'spec.timeZone "x"' },
      }),
    ).toMatchObject({ status: 'False', reason: 'InvalidTimeZone' });
  });
});

describe('retentionCondition', () => {
  it('names the rules in force, what was kept and what was deleted', () => {
    const c = retentionCondition(
      { keepLast: 2, keepDaily: 0, maxAge: '7d' },
      { keep: [{ name: 'a', reasons: ['newest'] }], delete: [{ name: 'b', reason: 'MaxAge' }] },
    );
    expect(c).toEqual({
      type: 'Retention',
      status: 'True',
      reason: 'Applied',
      message: 'keepLast 2, maxAge 7d; 1 Completed kept; deleted b (MaxAge)',
    });
    expect(retentionCondition(undefined, { keep: [], delete: [] })).toMatchObject({ reason: 'NoPolicy' });
  });
});
