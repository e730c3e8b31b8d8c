import { describe, expect, it } from 'vitest';
import type { Instance } from '../../shared/rediscluster/probe.ts';
import { describeSync, replicaSync } from './replicas.ts';

const X = 'x'.repeat(40);
const master: Instance = {
  pod: 'c-0',
  ordinal: 0,
  ip: '10.0.0.10',
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset: 500, replicas: [], replid: X },
};
const replica = (
  pod: string,
  r: Partial<Extract<Instance['replication'], { role: 'replica' }>>,
  o: Partial<Instance> = {},
): Instance => ({
  pod,
  ordinal: Number(pod.slice(-1)),
  ip: `10.0.0.1${pod.slice(-1)}`,
  podReady: true,
  terminating: false,
  replication: {
    role: 'replica',
    offset: 500,
    masterHost: '10.0.0.10',
    masterPort: 6379,
    linkUp: true,
    syncInProgress: false,
    replid: X,
    replid2: '',
    linkDownSeconds: 0,
    ...r,
  },
  ...o,
});

describe('replicas after a restore', () => {
  it('are in sync when they follow the master, link up, no sync, with its new replication id', () => {
    const s = replicaSync([master, replica('c-1', {}), replica('c-2', {})], master);
    expect(s).toEqual({ synced: ['c-1', 'c-2'], waiting: [], elsewhere: [] });
    expect(describeSync(s)).toBe('2 replicas in sync (c-1, c-2)');
  });

  it('are waited for while syncing, catching up under the old id, or not answering', () => {
    const s = replicaSync(
      [
        master,
        replica('c-1', { syncInProgress: true, linkUp: false }),
        replica('c-2', { replid: 'o'.repeat(40) }),
        { ...replica('c-3', {}), replication: undefined, error: 'connection refused' },
      ],
      master,
    );
    expect(s.synced).toEqual([]);
    expect(s.waiting).toEqual([
      { pod: 'c-1', why: 'syncing' },
      { pod: 'c-2', why: 'catching up' },
      { pod: 'c-3', why: 'connection refused' },
    ]);
  });

  it('are not waited for when they follow something else (fenced) or are on their way out', () => {
    const s = replicaSync(
      [master, replica('c-1', { masterHost: '127.0.0.1' }), replica('c-2', {}, { terminating: true })],
      master,
    );
    expect(s).toEqual({ synced: [], waiting: [], elsewhere: [{ pod: 'c-1', why: 'follows 127.0.0.1' }] });
  });
});
