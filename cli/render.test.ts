import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../shared/api/generated.ts';
import { renderBackupOutcome, renderCluster, renderRestoreOutcome } from './render.ts';

const cluster = (status: RedisCluster['status'], replicas = 3): RedisCluster => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'RedisCluster',
  metadata: { name: 'cache', namespace: 'demo' },
  spec: { version: '7.0', replicas },
  status,
});

describe('render', () => {
  it('a cluster: phase, master, ready/desired, version, last backup, a conditions table', () => {
    const text = renderCluster(
      cluster({
        phase: 'Degraded',
        master: 'cache-1',
        readyReplicas: 2,
        replicas: 3,
        version: '7.0.15',
        lastBackup: { name: 'nightly', completedAt: '2026-11-23T03:00:00Z' },
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'ReplicaDown',
            message: 'cache-2 is not ready',
            lastTransitionTime: 't',
          },
          { type: 'BackupStale', status: 'False', reason: 'Fresh', lastTransitionTime: 't' },
        ],
      }),
    );
    expect(text).toBe(
      [
        'Cluster:     demo/cache',
        'Phase:       Degraded',
        'Master:      cache-1',
        'Ready:       2/3',
        'Version:     7.0.15',
        'Last backup: nightly at 2026-11-23T03:00:00Z',
        'Conditions:',
        '  TYPE         STATUS  REASON       MESSAGE',
        '  Ready        False   ReplicaDown  cache-2 is not ready',
        '  BackupStale  False   Fresh',
      ].join('\n'),
    );
  });

  it('desired replicas come from the spec (a scale-up shows 3/5 before status catches up)', () => {
    expect(renderCluster(cluster({ readyReplicas: 3, replicas: 3 }, 5))).toContain('Ready:       3/5');
  });

  it('a cluster without status yet, and a version that differs from the spec', () => {
    const text = renderCluster(cluster(undefined));
    expect(text).toContain('Phase:       Unknown (no status yet)');
    expect(text).toContain('Last backup: none');
    expect(text).not.toContain('Conditions:');
    expect(renderCluster(cluster({ version: '6.2.14' }))).toContain('Version:     6.2.14 (spec: 7.0)');
  });

  it('backup outcomes', () => {
    expect(
      renderBackupOutcome('b1', {
        phase: 'Completed',
        location: 's3://backups/demo/cache/b1.rdb.zst',
        size: 1536,
        rdbSize: 4096,
        duration: '2.5s',
      }),
    ).toBe(
      'Backup b1 Completed\n  location: s3://backups/demo/cache/b1.rdb.zst\n  size:     1.5 KiB (4.0 KiB before compression)\n  duration: 2.5s',
    );
    expect(
      renderBackupOutcome('b1', {
        phase: 'Failed',
        error: { reason: 'StoreUnreachable', message: 'no route' },
      }),
    ).toBe('Backup b1 Failed: StoreUnreachable: no route');
  });

  it('restore outcomes', () => {
    expect(renderRestoreOutcome('r1', { phase: 'Completed', source: 'backup b1', keys: 12 })).toBe(
      'Restore r1 Completed\n  source:   backup b1\n  keys:     12',
    );
    expect(
      renderRestoreOutcome('r1', {
        phase: 'RolledBack',
        safetyBackup: 'r1-safety',
        error: { reason: 'LoadFailed', message: 'bad RDB' },
      }),
    ).toBe(
      'Restore r1 RolledBack (the cluster holds its data from before, from r1-safety): LoadFailed: bad RDB',
    );
    expect(renderRestoreOutcome('r1', { phase: 'Failed', error: { reason: 'NotFound' } })).toBe(
      'Restore r1 Failed: NotFound: (no message)',
    );
  });
});
