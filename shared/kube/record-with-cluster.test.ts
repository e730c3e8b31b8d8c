import { describe, expect, it } from 'vitest';
import { type EventRecorder, recordWithCluster, regardingOf } from './events.ts';

describe('recordWithCluster', () => {
  const recorded: Parameters<EventRecorder['record']>[0][] = [];
  const r: EventRecorder = { record: async (e) => void recorded.push(e) };
  const backup = regardingOf(
    { apiVersion: 'tideway.dev/v1alpha1', kind: 'Backup', metadata: { name: 'nightly', uid: 'b' } },
    'prod',
  );
  const cluster = regardingOf(
    { apiVersion: 'tideway.dev/v1alpha1', kind: 'RedisCluster', metadata: { name: 'cache', uid: 'c' } },
    'prod',
  );

  it('records on the object, and on its cluster with the action as prefix and the object named', async () => {
    await recordWithCluster(
      r,
      { regarding: backup, cluster, action: 'Backup' },
      { type: 'Normal', reason: 'Completed', note: 'done' },
    );
    await recordWithCluster(
      r,
      { regarding: backup, action: 'Backup' },
      { type: 'Warning', reason: 'Failed', note: 'no' },
    );
    expect(recorded).toEqual([
      { regarding: backup, action: 'Backup', type: 'Normal', reason: 'Completed', note: 'done' },
      {
        regarding: cluster,
        action: 'Backup',
        type: 'Normal',
        reason: 'BackupCompleted',
        note: 'nightly: done',
      },
      { regarding: backup, action: 'Backup', type: 'Warning', reason: 'Failed', note: 'no' },
    ]);
  });
});
