import { describe, expect, it } from 'vitest';
import type { Instance } from '../rediscluster/probe.ts';
import { backupSources, noSourceReason } from './sources.ts';

const master = (pod: string, ip: string, offset = 100): Instance => ({
  pod,
  ordinal: Number(pod.slice(-1)),
  ip,
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset, replicas: [], replid: 'r1' },
});
const replica = (
  pod: string,
  ip: string,
  o: Partial<Extract<Instance['replication'], { role: 'replica' }>> = {},
): Instance => ({
  pod,
  ordinal: Number(pod.slice(-1)),
  ip,
  podReady: true,
  terminating: false,
  replication: {
    role: 'replica',
    offset: 100,
    masterHost: '10.0.0.1',
    masterPort: 6379,
    linkUp: true,
    syncInProgress: false,
    replid: 'r1',
    replid2: '',
    linkDownSeconds: 0,
    ...o,
  },
});
const pods = (list: Instance[]) => list.map((i) => i.pod);

describe('backupSources', () => {
  const m = master('c-0', '10.0.0.1');

  it('prefers in-sync replicas, most advanced first, and keeps the master as the last resort', () => {
    const list = [m, replica('c-1', '10.0.0.2', { offset: 90 }), replica('c-2', '10.0.0.3', { offset: 100 })];
    expect(pods(backupSources(list, { source: 'prefer-replica', master: 'c-0' }))).toEqual([
      'c-2',
      'c-1',
      'c-0',
    ]);
  });

  it('takes only the master when told so', () => {
    const list = [m, replica('c-1', '10.0.0.2')];
    expect(pods(backupSources(list, { source: 'master', master: 'c-0' }))).toEqual(['c-0']);
  });

  it('never takes a replica that is not in sync with the serving master, or an instance on its way out', () => {
    const list = [
      m,
      replica('c-1', '10.0.0.2', { linkUp: false }),
      replica('c-2', '10.0.0.3', { syncInProgress: true }),
      replica('c-3', '10.0.0.4', { masterHost: '10.0.0.9' }),
      { ...replica('c-4', '10.0.0.5'), terminating: true },
      { ...replica('c-5', '10.0.0.6'), error: 'loading its data set' },
      replica('c-6', '10.0.0.7'),
    ];
    expect(pods(backupSources(list, { source: 'prefer-replica', master: 'c-0' }))).toEqual(['c-6', 'c-0']);
  });

  it('finds nothing when the recorded master does not serve as master: its replicas follow stale data', () => {
    const fenced = replica('c-0', '10.0.0.1', { masterHost: '127.0.0.1', linkUp: false });
    const list = [fenced, replica('c-1', '10.0.0.2')];
    expect(backupSources(list, { source: 'prefer-replica', master: 'c-0' })).toEqual([]);
    expect(backupSources([m], { source: 'prefer-replica', master: undefined })).toEqual([]);
    expect(noSourceReason(list, { source: 'prefer-replica', master: 'c-0' })).toMatch(
      /master c-0 does not serve \(replica\) and no replica is in sync/,
    );
    expect(noSourceReason([], { source: 'master', master: undefined })).toBe('the cluster has no master yet');
  });
});
