import { describe, expect, it } from 'vitest';
import type { BackupSchedule } from '../../shared/api/generated.ts';
import { desiredBackup } from './kube.ts';

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
