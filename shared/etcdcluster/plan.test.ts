import { describe, expect, it } from 'vitest';
import { type MemberState, nextMemberName, type Observed, planStep } from './plan.ts';

const IMAGE = 'gcr.io/etcd-development/etcd:v3.6.16';
const OLD = 'gcr.io/etcd-development/etcd:v3.5.26';

const member = (i: number, o: Partial<MemberState> = {}): MemberState => ({
  id: String(100 + i),
  name: `e-${i}`,
  learner: false,
  started: true,
  ...o,
});

/** A formed cluster of `n` healthy voters e-0..e-(n-1) on IMAGE, led by e-0. */
const cluster = (n: number, o: Partial<Observed> = {}): Observed => {
  const members = Array.from({ length: n }, (_, i) => member(i));
  return {
    memberPrefix: 'e',
    size: n,
    image: IMAGE,
    bootstrapped: true,
    bootstrapMembers: [],
    members,
    lastKnown: members.map((m) => m.name),
    leader: '100',
    pods: members.map((m) => ({ member: m.name, healthy: true, deleting: false, image: IMAGE })),
    volumes: members.map((m) => m.name),
    volumesDeleting: [],
    ...o,
  };
};

describe('planStep', () => {
  it('bootstraps `size` members, then makes their pods as a new cluster, then waits for it to form', () => {
    const fresh: Observed = {
      ...cluster(0),
      size: 3,
      bootstrapped: false,
      members: undefined,
      leader: undefined,
    };
    expect(planStep(fresh)).toEqual({ kind: 'bootstrap', members: ['e-0', 'e-1', 'e-2'] });
    const recorded = { ...fresh, bootstrapMembers: ['e-0', 'e-1', 'e-2'] };
    expect(
      planStep({ ...recorded, pods: [{ member: 'e-0', healthy: false, deleting: false, image: IMAGE }] }),
    ).toEqual({
      kind: 'createMember',
      member: 'e-1',
      join: { state: 'new', initialCluster: ['e-0', 'e-1', 'e-2'] },
      volume: 'new',
    });
    const all = ['e-0', 'e-1', 'e-2'].map((m) => ({
      member: m,
      healthy: false,
      deleting: false,
      image: IMAGE,
    }));
    expect(planStep({ ...recorded, pods: all }).kind).toBe('wait');
  });

  it('bootstraps a cluster made from a backup with its first member alone, then grows it by joining', () => {
    const fresh: Observed = {
      ...cluster(0),
      size: 3,
      bootstrapSize: 1,
      bootstrapped: false,
      members: undefined,
      leader: undefined,
    };
    expect(planStep(fresh)).toEqual({ kind: 'bootstrap', members: ['e-0'] });
    expect(planStep({ ...fresh, bootstrapMembers: ['e-0'] })).toEqual({
      kind: 'createMember',
      member: 'e-0',
      join: { state: 'new', initialCluster: ['e-0'] },
      volume: 'new',
    });
    // Its pod evicted before the cluster formed: deleted, so that it is made again.
    expect(
      planStep({
        ...fresh,
        bootstrapMembers: ['e-0'],
        pods: [{ member: 'e-0', healthy: false, deleting: false, ended: true, image: IMAGE }],
      }),
    ).toEqual({ kind: 'deletePod', member: 'e-0', reason: 'Ended' });
    // Formed with one member: the others are added as learners, one at a time.
    expect(planStep(cluster(1, { size: 3, bootstrapSize: 1 }))).toEqual({
      kind: 'addLearner',
      member: 'e-1',
    });
  });

  it('is converged when every voter is healthy, on the image, at the size', () => {
    expect(planStep(cluster(3))).toEqual({ kind: 'converged' });
  });

  it('scales up one member at a time: add a learner, start it, promote it once it runs', () => {
    expect(planStep(cluster(3, { size: 5 }))).toEqual({ kind: 'addLearner', member: 'e-3' });
    const added = cluster(3, { size: 5 });
    added.members = [...(added.members ?? []), member(3, { learner: true, started: false })];
    // Added, no pod yet: its pod joins the existing cluster, listing every member.
    expect(planStep(added)).toEqual({
      kind: 'createMember',
      member: 'e-3',
      join: { state: 'existing', initialCluster: ['e-0', 'e-1', 'e-2', 'e-3'] },
      volume: 'new',
    });
    added.pods = [...added.pods, { member: 'e-3', healthy: false, deleting: false, image: IMAGE }];
    added.volumes = [...added.volumes, 'e-3'];
    expect(planStep(added)).toMatchObject({ kind: 'wait', reason: 'LearnerStarting' });
    added.members = added.members.map((m) => (m.name === 'e-3' ? { ...m, started: true } : m));
    added.pods = added.pods.map((p) => (p.member === 'e-3' ? { ...p, healthy: true } : p));
    expect(planStep(added)).toEqual({ kind: 'promote', member: 'e-3', id: '103' });
  });

  it('removes a learner that never started once the size no longer wants it (scaled back), instead of waiting on it for good', () => {
    // 3 → 5, e-3's pod can never be scheduled; the size goes back to 3.
    const stuck = cluster(3);
    stuck.members = [...(stuck.members ?? []), member(3, { learner: true, started: false })];
    stuck.pods = [...stuck.pods, { member: 'e-3', healthy: false, deleting: false, image: IMAGE }];
    stuck.volumes = [...stuck.volumes, 'e-3'];
    expect(planStep(stuck)).toEqual({ kind: 'removeMember', member: 'e-3', id: '103', reason: 'ScaleDown' });
    // Still wanted (size 5): it is waited for.
    expect(planStep({ ...stuck, size: 5 })).toMatchObject({ kind: 'wait', reason: 'LearnerStarting' });
  });

  it('never adds a member to a cluster with an unhealthy member', () => {
    const o = cluster(3, { size: 5 });
    o.pods = o.pods.map((p) => (p.member === 'e-2' ? { ...p, healthy: false } : p));
    expect(planStep(o)).toMatchObject({ kind: 'wait', reason: 'MembersUnhealthy' });
  });

  it('scales down by removing the newest member that does not lead, then its pod, then its volume', () => {
    expect(planStep(cluster(5, { size: 3 }))).toEqual({
      kind: 'removeMember',
      member: 'e-4',
      id: '104',
      reason: 'ScaleDown',
    });
    // The newest leads: the next newest goes; the leader is never the one removed.
    expect(planStep(cluster(5, { size: 3, leader: '104' }))).toMatchObject({ member: 'e-3' });
    const removed = cluster(5, { size: 3 });
    removed.members = removed.members?.filter((m) => m.name !== 'e-4');
    expect(planStep(removed)).toEqual({ kind: 'deletePod', member: 'e-4', reason: 'Stray' });
    removed.pods = removed.pods.map((p) => (p.member === 'e-4' ? { ...p, deleting: true } : p));
    expect(planStep(removed)).toMatchObject({ kind: 'wait', reason: 'PodTerminating' });
    removed.pods = removed.pods.filter((p) => p.member !== 'e-4');
    expect(planStep(removed)).toEqual({ kind: 'deleteVolume', member: 'e-4' });
  });

  it('brings a member back on its own volume when its pod is gone, never on a new one', () => {
    const o = cluster(3);
    o.pods = o.pods.filter((p) => p.member !== 'e-1');
    expect(planStep(o)).toEqual({
      kind: 'createMember',
      member: 'e-1',
      join: { state: 'existing', initialCluster: ['e-0', 'e-1', 'e-2'] },
      volume: 'existing',
    });
    // ...before removing a member whose volume is going (restart first: the quorum needs it).
    const both = cluster(3, { volumes: ['e-0', 'e-1'], volumesDeleting: ['e-2'] });
    both.pods = both.pods.filter((p) => p.member !== 'e-1');
    expect(planStep(both)).toMatchObject({ kind: 'createMember', member: 'e-1', volume: 'existing' });
  });

  it('deletes a member pod that ended (evicted, node shut down) so it starts again, with or without quorum', () => {
    const o = cluster(3);
    o.pods = o.pods.map((p) => (p.member === 'e-1' ? { ...p, healthy: false, ended: true } : p));
    expect(planStep(o)).toEqual({ kind: 'deletePod', member: 'e-1', reason: 'Ended' });
    const nq = cluster(3, { members: undefined, leader: undefined });
    nq.pods = nq.pods.map((p) => ({ ...p, healthy: false, ended: p.member !== 'e-0' }));
    expect(planStep(nq)).toMatchObject({ kind: 'deletePod', member: 'e-1' });
  });

  it('never uses, nor bootstraps over, a volume of another cluster of the same name', () => {
    const fresh: Observed = {
      ...cluster(0),
      size: 3,
      bootstrapped: false,
      members: undefined,
      leader: undefined,
      foreignVolumes: ['e-0'],
    };
    expect(planStep(fresh)).toMatchObject({ kind: 'wait', reason: 'VolumeConflict' });
    expect(nextMemberName(cluster(3, { foreignVolumes: ['e-3'] }))).toBe('e-4');
    // Pods or volumes of ours but no bootstrap recorded (a status rewritten): never a second bootstrap.
    expect(planStep({ ...fresh, foreignVolumes: [], volumes: ['e-3'] })).toMatchObject({
      kind: 'wait',
      reason: 'AlreadyFormed',
    });
  });

  it('removes a member whose pod and volume are gone, then a new member takes its place', () => {
    const gone = cluster(3, { volumes: ['e-0', 'e-2'] });
    gone.pods = gone.pods.filter((p) => p.member !== 'e-1');
    expect(planStep(gone)).toEqual({ kind: 'removeMember', member: 'e-1', id: '101', reason: 'VolumeLost' });
    // After it left: a new member joins as a learner (its data is gone: it never rejoins as itself),
    // under a name no trace holds (here the recorded member list still names e-1).
    const left = cluster(3, { volumes: ['e-0', 'e-2'] });
    left.members = left.members?.filter((m) => m.name !== 'e-1');
    left.pods = left.pods.filter((p) => p.member !== 'e-1');
    expect(planStep(left)).toEqual({ kind: 'addLearner', member: 'e-3' });
  });

  it('replaces a member whose volume is being deleted while it still serves: a learner first, then the removal', () => {
    expect(planStep(cluster(3, { volumes: ['e-0', 'e-2'], volumesDeleting: ['e-1'] }))).toEqual({
      kind: 'addLearner',
      member: 'e-3',
    });
    expect(planStep(cluster(1, { volumes: [], volumesDeleting: ['e-0'] }))).toEqual({
      kind: 'addLearner',
      member: 'e-1',
    });
    // The replacement voted in: the doomed member leaves (not the newest, not the leader).
    const replaced = cluster(4, { size: 3, volumes: ['e-0', 'e-2', 'e-3'], volumesDeleting: ['e-1'] });
    expect(planStep(replaced)).toEqual({
      kind: 'removeMember',
      member: 'e-1',
      id: '101',
      reason: 'VolumeLost',
    });
  });

  it('starts a learner’s pod again when a member left before the learner first started: etcd would refuse its member list forever', () => {
    // e-1's volume is deleted while it serves: a learner e-3 is added, and its pod made with the
    // member list of then (e-1 in it).
    const doomed = cluster(3, { volumes: ['e-0', 'e-2'], volumesDeleting: ['e-1'] });
    expect(planStep(doomed)).toEqual({ kind: 'addLearner', member: 'e-3' });
    const added = {
      ...doomed,
      members: [...(doomed.members ?? []), member(3, { learner: true, started: false })],
    };
    const create = planStep(added);
    expect(create).toEqual({
      kind: 'createMember',
      member: 'e-3',
      join: { state: 'existing', initialCluster: ['e-0', 'e-1', 'e-2', 'e-3'] },
      volume: 'new',
    });
    const learnerPod = (initialCluster: string[]) => ({
      member: 'e-3',
      healthy: false,
      deleting: false,
      image: IMAGE,
      join: { state: 'existing' as const, initialCluster },
    });
    const made = { ...added, pods: [...added.pods, learnerPod(['e-0', 'e-1', 'e-2', 'e-3'])] };
    expect(planStep(made)).toMatchObject({ kind: 'wait', reason: 'LearnerStarting' });
    // e-1's pod goes with its volume before the learner's etcd ever started: e-1 leaves.
    const lost = {
      ...made,
      volumesDeleting: [],
      pods: made.pods.filter((p) => p.member !== 'e-1'),
    };
    expect(planStep(lost)).toEqual({ kind: 'removeMember', member: 'e-1', id: '101', reason: 'VolumeLost' });
    // The learner's pod still names e-1: it goes, and comes back with the list of now.
    const left = { ...lost, members: lost.members?.filter((m) => m.name !== 'e-1') };
    expect(planStep(left)).toEqual({ kind: 'deletePod', member: 'e-3', reason: 'Rejoin' });
    const going = {
      ...left,
      pods: left.pods.map((p) => (p.member === 'e-3' ? { ...p, deleting: true } : p)),
    };
    expect(planStep(going)).toMatchObject({ kind: 'wait', reason: 'LearnerStarting' });
    const gone = { ...left, pods: left.pods.filter((p) => p.member !== 'e-3') };
    expect(planStep(gone)).toEqual({
      kind: 'createMember',
      member: 'e-3',
      join: { state: 'existing', initialCluster: ['e-0', 'e-2', 'e-3'] },
      volume: 'new',
    });
    const again = { ...gone, pods: [...gone.pods, learnerPod(['e-0', 'e-2', 'e-3'])] };
    expect(planStep(again)).toMatchObject({ kind: 'wait', reason: 'LearnerStarting' });
    // Once started it has data, and etcd ignores the flags: its pod is never restarted for them.
    const started = {
      ...left,
      members: left.members?.map((m) => (m.name === 'e-3' ? { ...m, started: true } : m)),
      pods: left.pods.map((p) => (p.member === 'e-3' ? { ...p, healthy: true } : p)),
    };
    expect(planStep(started)).toEqual({ kind: 'promote', member: 'e-3', id: '103' });
  });

  it('upgrades followers first, in order, then moves leadership, then the old leader', () => {
    const o = cluster(3);
    o.pods = o.pods.map((p) => ({ ...p, image: OLD }));
    expect(planStep(o)).toEqual({ kind: 'deletePod', member: 'e-1', reason: 'Upgrade' });
    o.pods = o.pods.map((p) => (p.member === 'e-0' ? p : { ...p, image: IMAGE }));
    expect(planStep(o)).toEqual({ kind: 'moveLeader', from: '100', to: '101', toMember: 'e-1' });
    expect(planStep({ ...o, leader: '101' })).toEqual({
      kind: 'deletePod',
      member: 'e-0',
      reason: 'Upgrade',
    });
  });

  it('rolls out a change of resources like an upgrade; a pod made before pods carried their template is compared by image', () => {
    const o = cluster(3, { template: 'new' });
    o.pods = o.pods.map((p) => ({ ...p, template: 'old' }));
    expect(planStep(o)).toEqual({ kind: 'deletePod', member: 'e-1', reason: 'Upgrade' });
    o.pods = o.pods.map((p) => (p.member === 'e-0' ? p : { ...p, template: 'new' }));
    expect(planStep(o)).toEqual({ kind: 'moveLeader', from: '100', to: '101', toMember: 'e-1' });
    // Same template everywhere: nothing to do. No template on the pods: only the image counts.
    expect(planStep(cluster(3, { template: 'new' }))).toEqual({ kind: 'converged' });
    const legacy = cluster(3, { template: 'new' });
    legacy.pods = legacy.pods.map((p) => ({ ...p, template: undefined }));
    expect(planStep(legacy)).toEqual({ kind: 'converged' });
  });

  it('restarts no healthy member while another is down; a member down on another image is restarted (costs nothing)', () => {
    const o = cluster(3);
    o.pods = o.pods.map((p) => ({ ...p, image: OLD, healthy: p.member !== 'e-2' }));
    expect(planStep(o)).toEqual({ kind: 'deletePod', member: 'e-2', reason: 'Upgrade' });
    // A bad image rolled back: the member it broke is restarted on the spec's image.
    const bad = cluster(3);
    bad.pods = bad.pods.map((p) => (p.member === 'e-1' ? { ...p, image: 'bad:1', healthy: false } : p));
    expect(planStep(bad)).toEqual({ kind: 'deletePod', member: 'e-1', reason: 'Upgrade' });
    // Down on the spec's image: wait for it, restart nothing else.
    const down = cluster(3);
    down.pods = down.pods.map((p) => ({
      ...p,
      image: p.member === 'e-2' ? IMAGE : OLD,
      healthy: p.member !== 'e-2',
    }));
    expect(planStep(down)).toMatchObject({ kind: 'wait', reason: 'MembersUnhealthy' });
  });

  it('never restarts an outdated member whose pod is Ready for one missed status call, nor names one with no pod', () => {
    // Mid-rollout: e-0 restarts on the new image; e-1 (old image, pod Ready) missed one status call.
    const o = cluster(3);
    o.pods = o.pods.map((p) => ({
      ...p,
      image: p.member === 'e-0' ? IMAGE : OLD,
      healthy: p.member === 'e-2',
      ready: p.member !== 'e-0',
    }));
    expect(planStep(o)).toMatchObject({ kind: 'wait', reason: 'MembersUnhealthy' });
    // A learner with no pod at all (its pod not made again yet): nothing to restart.
    const nopod = cluster(3, { size: 4 });
    nopod.members = [...(nopod.members ?? []), member(3, { learner: true, started: false })];
    nopod.volumes = [...nopod.volumes, 'e-3'];
    expect(planStep(nopod)).not.toMatchObject({ kind: 'deletePod', member: 'e-3' });
  });

  it('is converged only once the client Service routes to every member (their pods Ready)', () => {
    const o = cluster(3);
    o.pods = o.pods.map((p) => ({ ...p, ready: p.member !== 'e-2' }));
    expect(planStep(o)).toMatchObject({ kind: 'wait', reason: 'PodsNotReady' });
  });

  it('is not converged while etcd raises an alarm', () => {
    expect(planStep(cluster(3, { alarms: ['NOSPACE on e-1'] }))).toMatchObject({
      kind: 'wait',
      reason: 'Alarm',
    });
  });

  it('with no member answering: restarts pods on their volumes, then waits (quorum lost)', () => {
    const o = cluster(3, { members: undefined, leader: undefined });
    o.pods = o.pods.filter((p) => p.member === 'e-0');
    expect(planStep(o)).toEqual({
      kind: 'createMember',
      member: 'e-1',
      join: { state: 'existing', initialCluster: ['e-0', 'e-1', 'e-2'] },
      volume: 'existing',
    });
    o.pods = ['e-0', 'e-1', 'e-2'].map((m) => ({ member: m, healthy: false, deleting: false, image: IMAGE }));
    expect(planStep(o)).toMatchObject({ kind: 'wait', reason: 'NoQuorum' });
  });

  it('names a new member past every name with a trace (pod, volume, member)', () => {
    expect(nextMemberName(cluster(3))).toBe('e-3');
    expect(nextMemberName(cluster(3, { volumesDeleting: ['e-7'] }))).toBe('e-8');
    expect(nextMemberName(cluster(0, { memberPrefix: 'e', lastKnown: [] }))).toBe('e-0');
  });

  describe('planStep with a member Tideway did not make', () => {
    const stranger = { id: '4660', name: 'manual', peerURLs: ['http://10.0.0.9:2380'] };

    it('changes no membership while it is there: its vote counts, and nothing here counts it', () => {
      // Without it, a size of 2 would remove e-2 as a member too many.
      const o = cluster(3, { size: 2, foreignMembers: [stranger] });
      expect(planStep(o)).toEqual({
        kind: 'wait',
        reason: 'ForeignMember',
        message:
          "member manual (id 1234, peer URL http://10.0.0.9:2380) is not one of this cluster's: Tideway changes nothing while it is a member (its vote counts in the quorum); remove it with etcdctl member remove 1234",
      });
      // Nor an upgrade: it would take a member down next to one Tideway cannot see.
      const outdated = cluster(3, { foreignMembers: [{ ...stranger, name: '' }] });
      outdated.pods = outdated.pods.map((p) => ({ ...p, image: OLD }));
      expect(planStep(outdated)).toMatchObject({ kind: 'wait', reason: 'ForeignMember' });
      expect((planStep(outdated) as { message: string }).message).toMatch(/^member \(not started\)/);
    });

    it('still starts the pod of one of its own members again first', () => {
      const o = cluster(3, { foreignMembers: [stranger] });
      o.pods = o.pods.filter((p) => p.member !== 'e-1');
      expect(planStep(o)).toMatchObject({ kind: 'createMember', member: 'e-1', volume: 'existing' });
    });
  });
});
