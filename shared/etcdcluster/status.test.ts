import { describe, expect, it } from 'vitest';
import type { EtcdCluster } from '../api/generated.ts';
import type { EndpointStatus } from '../etcd/types.ts';
import type { Seen } from './observe.ts';
import type { Observed } from './plan.ts';
import { healthOf, lagsOf, statusFrom } from './status.ts';

const observed = (o: Partial<Observed> = {}): Observed => ({
  memberPrefix: 'e',
  size: 3,
  image: 'img',
  bootstrapped: true,
  bootstrapMembers: [],
  members: ['e-0', 'e-1', 'e-2'].map((name, i) => ({ id: String(i), name, learner: false, started: true })),
  lastKnown: ['e-0', 'e-1', 'e-2'],
  leader: '0',
  pods: ['e-0', 'e-1', 'e-2'].map((member) => ({ member, healthy: true, deleting: false, image: 'img' })),
  volumes: ['e-0', 'e-1', 'e-2'],
  volumesDeleting: [],
  ...o,
});
const seen = (o: Partial<Observed> = {}, alarms: Seen['alarms'] = []): Seen => ({
  observed: observed(o),
  pods: [],
  statuses: new Map(),
  clusterId: '1',
  alarms,
});

describe('the Healthy condition of an EtcdCluster', () => {
  it('is True when every member answers with a leader and no alarm is raised', () => {
    expect(healthOf(seen())).toMatchObject({ status: 'True', reason: 'Healthy' });
    // A voter Tideway did not make: its own three answer, but they cannot say they may lose one.
    const stranger = { id: '9', name: '', peerURLs: ['http://10.0.0.9:2380'] };
    expect(healthOf(seen({ foreignMembers: [stranger] }))).toMatchObject({
      status: 'False',
      reason: 'ForeignMember',
      message: expect.stringMatching(/^1 member not made by Tideway \(http:\/\/10\.0\.0\.9:2380\) votes/),
    });
  });

  it('says QuorumLost at once when no member answers with the member list', () => {
    const h = healthOf(seen({ members: undefined, pods: [] }));
    expect(h).toMatchObject({ status: 'False', reason: 'QuorumLost' });
    expect(h.message).toContain('a majority of 3');
  });

  it('says Unreachable, not QuorumLost, when none answers Tideway though a majority of member pods are Ready', () => {
    const ready = ['e-0', 'e-1', 'e-2'].map((member) => ({
      member,
      healthy: false,
      deleting: false,
      image: 'img',
      ready: member !== 'e-2',
    }));
    const h = healthOf(seen({ members: undefined, pods: ready }));
    expect(h).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(h.message).toContain('2 of 3 member pods are Ready');
    // A minority Ready: the quorum may well be lost.
    const few = ready.map((p) => ({ ...p, ready: p.member === 'e-0' }));
    expect(healthOf(seen({ members: undefined, pods: few }))).toMatchObject({ reason: 'QuorumLost' });
    // Members that answer their status (with no leader) but give no member list: cut off from
    // each other, the quorum lost.
    const answering = { ...seen({ members: undefined, pods: ready }) };
    answering.statuses = new Map([['e-0', { raftIndex: 5 } as unknown as EndpointStatus]]);
    expect(healthOf(answering)).toMatchObject({ reason: 'QuorumLost' });
  });

  it('says NoSpace, naming the member, when the database reached its quota', () => {
    const h = healthOf(seen({}, [{ member: 'e-1', alarm: 'NOSPACE' }]));
    expect(h).toMatchObject({ status: 'False', reason: 'NoSpace' });
    expect(h.message).toContain('NOSPACE on e-1');
  });

  it('names the members that do not answer', () => {
    const o = observed();
    const h = healthOf(seen({ pods: o.pods.map((p) => ({ ...p, healthy: p.member !== 'e-2' })) }));
    expect(h).toEqual({
      status: 'False',
      reason: 'MembersUnhealthy',
      message: 'e-2 does not answer or has no leader',
    });
  });
});

describe('raft index lag in the status and the Healthy condition', () => {
  const T0 = new Date('2026-11-26T00:00:00.000Z');
  const status = (raftIndex: number) =>
    ({ raftIndex, version: '3.6.16', dbSize: 100, dbSizeInUse: 60 }) as unknown as EndpointStatus;
  /** e-1 leads at 9000; e-0 is 50 behind, e-2 5000 behind. */
  const lagged = (): Seen => ({
    ...seen({ leader: '1' }),
    statuses: new Map([
      ['e-0', status(8950)],
      ['e-1', status(9000)],
      ['e-2', status(4000)],
    ]),
  });
  const cluster = { metadata: { name: 'e' }, spec: { size: 3 } } as unknown as EtcdCluster;

  it('writes each member’s lag behind the leader, keeps laggingSince and lastDefragmentation', () => {
    const previous = [
      { name: 'e-2', laggingSince: T0.toISOString() },
      { name: 'e-0', lastDefragmentation: '2026-11-25T00:00:00.000Z' },
    ];
    const lags = lagsOf(lagged(), previous, new Date(T0.getTime() + 10_000));
    const s = statusFrom(cluster, { members: previous }, lagged(), { kind: 'converged' }, lags.members);
    expect(s.members).toEqual([
      {
        name: 'e-0',
        id: '0',
        learner: false,
        healthy: true,
        version: '3.6.16',
        raftIndex: 8950,
        dbSize: 100,
        dbSizeInUse: 60,
        lag: 50,
        lastDefragmentation: '2026-11-25T00:00:00.000Z',
      },
      expect.objectContaining({ name: 'e-1', lag: 0 }),
      expect.objectContaining({ name: 'e-2', lag: 5000, laggingSince: T0.toISOString() }),
    ]);
    // Within the grace period: still Healthy.
    expect(healthOf(lagged(), lags.lagging)).toMatchObject({ status: 'True' });
  });

  it('says MemberLagging once a voter lags past the grace period, after members that do not answer', () => {
    const previous = [{ name: 'e-2', laggingSince: T0.toISOString() }];
    const { lagging } = lagsOf(lagged(), previous, new Date(T0.getTime() + 31_000));
    const h = healthOf(lagged(), lagging);
    expect(h).toMatchObject({ status: 'False', reason: 'MemberLagging' });
    expect(h.message).toContain('e-2 is 5000 raft entries behind the leader');
    const down = lagged();
    const o = down.observed;
    const h2 = healthOf(
      { ...down, observed: { ...o, pods: o.pods.map((p) => ({ ...p, healthy: p.member !== 'e-0' })) } },
      lagging,
    );
    expect(h2.reason).toBe('MembersUnhealthy');
  });
});
