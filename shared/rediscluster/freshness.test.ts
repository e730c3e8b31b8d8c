import { describe, expect, it } from 'vitest';
import type { Backup, RedisCluster } from '../api/generated.ts';
import { freshness, lastBackupOf } from './freshness.ts';

const rc = (maxBackupAge?: string, created = '2026-11-01T00:00:00Z') =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'cache', namespace: 'ns', creationTimestamp: created },
    spec: maxBackupAge ? { backup: { maxBackupAge } } : {},
  }) as unknown as RedisCluster;
const backup = (
  name: string,
  cluster: string,
  phase: string,
  completedAt?: string,
  times: { takenAt?: string; startedAt?: string } = {},
) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: { name },
    spec: { cluster: { name: cluster } },
    status: { phase, ...(completedAt ? { completedAt } : {}), ...times },
  }) as Backup;

const now = new Date('2026-11-23T12:00:00Z');

describe('backup freshness', () => {
  it('takes the newest Completed backup of this cluster only (without takenAt: by completion time)', () => {
    const list = [
      backup('old', 'cache', 'Completed', '2026-11-22T00:00:00Z'),
      backup('newest-failed', 'cache', 'Failed', '2026-11-23T11:00:00Z'),
      backup('other-cluster', 'sessions', 'Completed', '2026-11-23T11:30:00Z'),
      backup('new', 'cache', 'Completed', '2026-11-23T10:00:00Z'),
      backup('running', 'cache', 'Running'),
    ];
    expect(lastBackupOf('cache', list)).toEqual({
      name: 'new',
      completedAt: '2026-11-23T10:00:00Z',
      takenAt: Date.parse('2026-11-23T10:00:00Z'),
    });
  });

  it('orders by when the data was taken: the backup that finished last may hold the older data', () => {
    const list = [
      // Started first and streamed long; finished last.
      backup('long', 'cache', 'Completed', '2026-11-23T11:30:00Z', { takenAt: '2026-11-23T09:00:00Z' }),
      backup('short', 'cache', 'Completed', '2026-11-23T10:00:00Z', { takenAt: '2026-11-23T09:50:00Z' }),
      // From before takenAt was recorded: its start stands in.
      backup('legacy', 'cache', 'Completed', '2026-11-23T11:45:00Z', { startedAt: '2026-11-23T09:40:00Z' }),
    ];
    expect(lastBackupOf('cache', list)?.name).toBe('short');
    // The age is the data's: 26h10m, not the 26h since the upload finished.
    const f = freshness(rc('26h'), list.slice(1, 2), new Date('2026-11-24T12:00:00Z'));
    expect(f.ageSeconds).toBe(26 * 3600 + 600);
    expect(f.condition).toMatchObject({ status: 'True', reason: 'TooOld' });
    expect(f.condition?.message).toContain('holds data from 2026-11-23T09:50:00Z');
    expect(f.lastBackup).toEqual({ name: 'short', completedAt: '2026-11-23T10:00:00Z' });
  });

  it('is stale once the newest backup is older than maxBackupAge, fresh before', () => {
    const list = [backup('b', 'cache', 'Completed', '2026-11-22T09:00:00Z')]; // 27 h ago
    expect(freshness(rc('26h'), list, now).condition).toMatchObject({ status: 'True', reason: 'TooOld' });
    expect(freshness(rc('28h'), list, now).condition).toMatchObject({ status: 'False', reason: 'Fresh' });
    expect(freshness(rc('26h'), list, now).ageSeconds).toBe(27 * 3600);
  });

  it('gives a new cluster maxBackupAge for its first backup, then calls it stale', () => {
    expect(freshness(rc('1h', '2026-11-23T11:30:00Z'), [], now).condition).toMatchObject({
      status: 'False',
      reason: 'FirstBackupDue',
    });
    expect(freshness(rc('1h', '2026-11-23T10:30:00Z'), [], now).condition).toMatchObject({
      status: 'True',
      reason: 'NoBackup',
    });
  });

  it('sets no condition without a target, but still reports the last backup', () => {
    const f = freshness(rc(), [backup('b', 'cache', 'Completed', '2026-11-23T11:00:00Z')], now);
    expect(f.condition).toBeUndefined();
    expect(f.lastBackup?.name).toBe('b');
  });
});
