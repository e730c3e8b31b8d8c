import { describe, expect, it } from 'vitest';
import type { BackupSchedule } from '../../shared/api/generated.ts';
import { desiredBackup, unchanged } from './kube.ts';

const schedule = (cluster: BackupSchedule['spec']['cluster']): BackupSchedule => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'BackupSchedule',
  metadata: { name: 'nightly', namespace: 'prod', uid: 'u-1' },
  spec: { cluster, schedule: '0 3 * * *', template: { source: 'master' } },
});

describe('the Backup of a scheduled run', () => {
  it('names the schedule’s cluster with its kind: an EtcdCluster’s run backs up the EtcdCluster', () => {
    const at = new Date('2026-11-26T03:00:00Z');
    expect(desiredBackup(schedule({ name: 'config', kind: 'EtcdCluster' }), at).spec).toEqual({
      source: 'master',
      cluster: { name: 'config', kind: 'EtcdCluster' },
    });
    expect(desiredBackup(schedule({ name: 'cache' }), at).spec.cluster).toEqual({
      name: 'cache',
      kind: 'RedisCluster',
    });
  });
});

describe('a status write', () => {
  it('is skipped when the status says the same, whatever the order of its keys', () => {
    const current = { active: ['a'], lastScheduleTime: '2026-11-28T03:00:00Z', missedRuns: 0 };
    expect(
      unchanged({ missedRuns: 0, lastScheduleTime: '2026-11-28T03:00:00Z', active: ['a'] }, current),
    ).toBe(true);
    expect(unchanged({ ...current, missedRuns: 1 }, current)).toBe(false);
    expect(unchanged({ ...current, active: ['a', 'b'] }, current)).toBe(false);
    expect(unchanged(undefined, current)).toBe(true);
  });
});
