import { describe, expect, it } from 'vitest';
import type { Seen } from './observe.ts';
import type { Observed } from './plan.ts';
import { healthOf } from './status.ts';

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
  });

  it('says QuorumLost at once when no member answers with the member list', () => {
    const h = healthOf(seen({ members: undefined, pods: [] }));
    expect(h).toMatchObject({ status: 'False', reason: 'QuorumLost' });
    expect(h.message).toContain('a majority of 3');
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
