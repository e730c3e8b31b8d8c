import { describe, expect, it } from 'vitest';
import { memberIdFromHex } from '../etcd/ids.ts';
import type { EndpointStatus } from '../etcd/types.ts';
import { leaderOf, sameCluster, splitMembers } from './observe.ts';

const status = (leader: string | undefined, raftTerm: number) =>
  ({ leader, raftTerm }) as unknown as EndpointStatus;

describe('what a run believes it saw', () => {
  it('takes the leader claimed in the highest term: a cut-off old leader still claims its own', () => {
    expect(leaderOf([status('1', 4), status('2', 5), status('2', 5)])).toBe('2');
    // The old leader answers first and alone in its term: the newer claim still wins.
    expect(leaderOf([status('1', 7), status(undefined, 9), status('3', 8)])).toBe('3');
    expect(leaderOf([status(undefined, 3)])).toBeUndefined();
  });

  it('treats an answer from another etcd cluster (other id) as not this cluster’s', () => {
    const hex = 'b81129619a9cb58b';
    const same = memberIdFromHex(hex);
    expect(sameCluster(hex, same)).toBe(true);
    expect(sameCluster(hex, memberIdFromHex('4c5f00000000beef'))).toBe(false);
    // Before the cluster formed nothing is recorded: any answer may be its first.
    expect(sameCluster(undefined, same)).toBe(true);
  });

  it('tells this cluster’s members (by peer URL) from any other, named or not started', () => {
    const c = { metadata: { name: 'main', namespace: 'prod' }, spec: {} } as never;
    const url = (m: string) => `https://${m}.main-etcd-peers.prod.svc:2380`;
    const { members, foreign } = splitMembers(c, [
      { id: '1', name: 'main-etcd-0', peerURLs: [url('main-etcd-0')], isLearner: false },
      { id: '2', name: '', peerURLs: [url('main-etcd-3')], isLearner: true },
      { id: '3', name: 'manual', peerURLs: ['http://10.0.0.9:2380'], isLearner: false },
      { id: '4', name: '', peerURLs: ['http://10.0.0.10:2380'], isLearner: false },
      // Our URL, another name: not a member Tideway made.
      { id: '5', name: 'other', peerURLs: [url('main-etcd-4')], isLearner: false },
      // Under our peer domain, but not a name Tideway gives (<prefix>-<n>).
      { id: '6', name: '', peerURLs: [url('foo')], isLearner: false },
    ]);
    expect(members).toEqual([
      { id: '1', name: 'main-etcd-0', learner: false, started: true },
      { id: '2', name: 'main-etcd-3', learner: true, started: false },
    ]);
    expect(foreign.map((f) => f.id)).toEqual(['3', '4', '5', '6']);
  });
});
