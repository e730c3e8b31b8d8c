import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import { bootstrapPending } from './bootstrap.ts';
import { observe } from './observed.ts';
import type { Instance } from './probe.ts';

const rc = (status: RedisCluster['status'], fromBackup = 'nightly') =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'c', namespace: 'ns' },
    spec: { replicas: 1, ...(fromBackup ? { bootstrap: { fromBackup: { name: fromBackup } } } : {}) },
    status,
  }) as RedisCluster;
const serving: Instance = {
  pod: 'c-0',
  ordinal: 0,
  ip: '10.0.0.1',
  podReady: true,
  terminating: false,
  replication: {
    role: 'master',
    offset: 10,
    replid: 'r',
    replicas: [],
  } as unknown as Instance['replication'],
};

describe('bootstrap from a backup', () => {
  it('keeps a cluster whose servers all serve out of Ready until the backup is loaded', () => {
    const o = observe(rc({ master: 'c-0', phase: 'Creating' }), [serving], 'c-0', []);
    expect(o.phase).toBe('Creating');
    expect(o.conditions[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Bootstrapping' });
  });

  it('says why, in the words reconcile recorded, and Failed when a person has to act', () => {
    const failed = rc({
      master: 'c-0',
      bootstrap: { reason: 'BackupNotFound', message: 'Backup nightly does not exist', failed: true },
    });
    const o = observe(failed, [serving], 'c-0', []);
    expect(o.phase).toBe('Failed');
    expect(o.conditions[0]).toMatchObject({
      status: 'False',
      reason: 'BackupNotFound',
      message: 'Backup nightly does not exist',
    });
  });

  it('is Ready once the data is in, and never gated without fromBackup', () => {
    const loaded = rc({
      master: 'c-0',
      phase: 'Creating',
      bootstrap: { completedAt: '2026-11-23T00:00:00Z' },
    });
    expect(observe(loaded, [serving], 'c-0', []).phase).toBe('Ready');
    expect(bootstrapPending(rc({ master: 'c-0' }, ''))).toBeUndefined();
    expect(observe(rc({ master: 'c-0', phase: 'Creating' }, ''), [serving], 'c-0', []).phase).toBe('Ready');
  });
});
