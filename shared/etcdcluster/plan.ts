import { memberIdToHex } from '../etcd/ids.ts';
import type { Join } from './desired.ts';
import { ordinalOf } from './names.ts';

/** A member as the member list shows it. */
export type MemberState = {
  id: string;
  /** From its peer URL: known before the member ever started. */
  name: string;
  learner: boolean;
  /** It started and published itself (the member list carries its name). */
  started: boolean;
};

/** A member not named by this cluster's peer URLs: `name` is '' until it starts. */
export type ForeignMember = { id: string; name: string; peerURLs: readonly string[] };

export type PodState = {
  member: string;
  /** The member process runs and answered a status request (of this very cluster). */
  healthy: boolean;
  deleting: boolean;
  /** Failed or Succeeded (evicted, node shut down): nothing restarts it but its deletion. */
  ended?: boolean;
  /** Its Ready condition (the readiness probe): only then does the client Service route to it. */
  ready?: boolean;
  image: string;
  /** The pod template it was made from (image and resources, podTemplateOf); absent on older pods. */
  template?: string | undefined;
  /** How it starts its member the first time (its flags): etcd ignores them once it has data. */
  join?: Join;
};

export type Observed = {
  /** Member names are `<memberPrefix>-<n>`. */
  memberPrefix: string;
  /** Desired voting members. */
  size: number;
  image: string;
  /** The pod template the spec makes (image and resources). */
  template?: string;
  /** The cluster has formed once (status.clusterID): from now on members join, never bootstrap. */
  bootstrapped: boolean;
  /**
   * Members it bootstraps with (default `size`): 1 for a cluster made from a backup, whose first
   * member starts from the snapshot; the others join it one at a time.
   */
  bootstrapSize?: number;
  /** The members chosen at bootstrap, recorded before their pods were made. */
  bootstrapMembers: readonly string[];
  /** The member list (linearizable), or undefined when no member answered with one. */
  members: readonly MemberState[] | undefined;
  /** The members last seen (status.members), for restarting pods when none answers. */
  lastKnown: readonly string[];
  /** The leader's member id, if one is known. */
  leader: string | undefined;
  pods: readonly PodState[];
  /** Members with a volume that is not being deleted. */
  volumes: readonly string[];
  /** Members whose volume is being deleted (its pod still holds it). */
  volumesDeleting: readonly string[];
  /** Member names whose `data-<name>` belongs to another cluster (an earlier one of the same name). */
  foreignVolumes?: readonly string[];
  /** Members in etcd's list that are not Tideway's (added by hand): their votes count all the same. */
  foreignMembers?: readonly ForeignMember[];
  /** Active alarms (NOSPACE, CORRUPT): the members refuse clients; nothing is converged. */
  alarms?: readonly string[];
};

export type Step =
  | { kind: 'bootstrap'; members: string[] }
  /** `volume: 'existing'` only ever starts on this cluster's volume; 'new' makes one (a member that never started). */
  | { kind: 'createMember'; member: string; join: Join; volume: 'new' | 'existing' }
  | { kind: 'addLearner'; member: string }
  | { kind: 'promote'; member: string; id: string }
  | { kind: 'removeMember'; member: string; id: string; reason: 'ScaleDown' | 'VolumeLost' }
  | { kind: 'moveLeader'; from: string; to: string; toMember: string }
  | { kind: 'deletePod'; member: string; reason: 'Removed' | 'Upgrade' | 'Stray' | 'Ended' | 'Rejoin' }
  | { kind: 'deleteVolume'; member: string }
  | { kind: 'wait'; reason: string; message: string }
  | { kind: 'converged' };

const byOrdinal = (prefix: string) => (a: string, b: string) =>
  ordinalOf(prefix, a) - ordinalOf(prefix, b) || a.localeCompare(b);

/** The next member name: one past every name in use (pods, volumes, members), never reused while traces remain. */
export const nextMemberName = (o: Observed): string => {
  const used = [
    ...o.pods.map((p) => p.member),
    ...o.volumes,
    ...o.volumesDeleting,
    ...(o.members ?? []).map((m) => m.name),
    ...o.lastKnown,
    ...o.bootstrapMembers,
    ...(o.foreignVolumes ?? []),
  ];
  const next = Math.max(-1, ...used.map((m) => ordinalOf(o.memberPrefix, m))) + 1;
  return `${o.memberPrefix}-${next}`;
};

/**
 * One step toward the spec, safety first: repair (restart a member's pod on its volume, remove a
 * member whose volume is gone, clean what belongs to no member), then a learner's progress, then
 * size (one member at a time: add as a learner and promote once caught up; remove a non-leader),
 * then the version (one member at a time, the leader last after moving leadership). Disruptive
 * steps wait until every member is healthy. Pure: the handler observes, acts, and asks again.
 */
export const planStep = (o: Observed): Step => {
  const pods = new Map(o.pods.map((p) => [p.member, p]));
  // Made from another template than the spec's: another image, or other resources (a pod made
  // before pods carried their template is compared by image alone).
  const outdated = (p: PodState | undefined) =>
    p?.image !== o.image || (!!o.template && !!p?.template && p.template !== o.template);
  const volumes = new Set(o.volumes);
  const foreign = new Set(o.foreignVolumes ?? []);
  const conflict = (member: string): Step => ({
    kind: 'wait',
    reason: 'VolumeConflict',
    message: `data-${member} belongs to another cluster (an earlier one of this name?): Tideway neither uses nor deletes it; delete it, or rename the cluster`,
  });

  if (!o.bootstrapped) {
    if (o.bootstrapMembers.length === 0) {
      // Something of ours beyond a bootstrap means the cluster formed before: never bootstrap again.
      if (o.pods.length > 0 || o.volumes.length > 0)
        return {
          kind: 'wait',
          reason: 'AlreadyFormed',
          message: 'member pods or volumes exist but no bootstrap is recorded: not bootstrapping over them',
        };
      const names = Array.from({ length: o.bootstrapSize ?? o.size }, (_, i) => `${o.memberPrefix}-${i}`);
      const taken = names.find((m) => foreign.has(m));
      return taken ? conflict(taken) : { kind: 'bootstrap', members: names };
    }
    // A first member's pod that ended (evicted: its restore step filled the node's disk) comes back
    // only once deleted.
    const endedFirst = o.pods.find((p) => p.ended && !p.deleting);
    if (endedFirst) return { kind: 'deletePod', member: endedFirst.member, reason: 'Ended' };
    const missing = o.bootstrapMembers.find((m) => !pods.has(m));
    if (missing)
      return foreign.has(missing)
        ? conflict(missing)
        : {
            kind: 'createMember',
            member: missing,
            join: { state: 'new', initialCluster: o.bootstrapMembers },
            volume: 'new',
          };
    return {
      kind: 'wait',
      reason: 'Bootstrapping',
      message: 'waiting for the first members to form the cluster',
    };
  }

  // A pod that ended (evicted, its node shut down) is restarted by nothing but its deletion.
  const ended = o.pods.find((p) => p.ended && !p.deleting);
  if (ended) return { kind: 'deletePod', member: ended.member, reason: 'Ended' };

  if (!o.members) {
    // Nobody answers: bring back the pods of members whose volumes are there; nothing else.
    const down = o.lastKnown.find((m) => !pods.has(m) && volumes.has(m));
    if (down)
      return {
        kind: 'createMember',
        member: down,
        join: { state: 'existing', initialCluster: o.lastKnown },
        volume: 'existing',
      };
    return {
      kind: 'wait',
      reason: 'NoQuorum',
      message: `no member answers with the member list (${o.pods.length} of ${o.lastKnown.length} pods exist)`,
    };
  }

  const members = o.members;
  const names = members.map((m) => m.name);
  const inList = new Set(names);
  const voters = members.filter((m) => !m.learner);
  const healthy = (m: MemberState) => pods.get(m.name)?.healthy === true && !pods.get(m.name)?.deleting;
  const allHealthy = members.every(healthy);
  const leaderMember = members.find((m) => m.id === o.leader);

  // A member without its pod: start it again on its own volume (a started member never gets a new
  // one: it would vote with an empty log), or, never started, on a new one.
  const podless = members.find(
    (m) => !pods.has(m.name) && (!m.started || volumes.has(m.name)) && !o.volumesDeleting.includes(m.name),
  );
  if (podless)
    return foreign.has(podless.name)
      ? conflict(podless.name)
      : {
          kind: 'createMember',
          member: podless.name,
          join: { state: 'existing', initialCluster: names },
          volume: podless.started ? 'existing' : 'new',
        };

  // A member Tideway did not make (etcdctl member add): its vote counts in etcd's quorum but
  // Tideway cannot see or restart it, so no count here is right while it is there. Nothing about
  // the membership changes (nor a restart of a healthy member) until a person removes it.
  const stranger = o.foreignMembers?.[0];
  if (stranger)
    return {
      kind: 'wait',
      reason: 'ForeignMember',
      message: `member ${stranger.name || '(not started)'} (id ${memberIdToHex(stranger.id)}, peer URL ${stranger.peerURLs.join(', ') || 'none'}) is not one of this cluster's: Tideway changes nothing while it is a member (its vote counts in the quorum); remove it with etcdctl member remove ${memberIdToHex(stranger.id)}`,
    };

  // A started member whose pod and volume are both gone lost its data: it leaves (etcd refuses a
  // removal that would cost the quorum), and a new member takes its place below.
  const lost = members.find((m) => m.started && !volumes.has(m.name) && !pods.has(m.name));
  if (lost) return { kind: 'removeMember', member: lost.name, id: lost.id, reason: 'VolumeLost' };

  // What belongs to no member: pods and volumes of removed members (or of an add that failed).
  const strayPod = o.pods.find((p) => !inList.has(p.member));
  if (strayPod) {
    if (strayPod.deleting)
      return { kind: 'wait', reason: 'PodTerminating', message: `${strayPod.member} is stopping` };
    return { kind: 'deletePod', member: strayPod.member, reason: 'Stray' };
  }
  const strayVolume = o.volumes.find((v) => !inList.has(v) && !pods.has(v));
  if (strayVolume) return { kind: 'deleteVolume', member: strayVolume };

  // A member running an image other than the spec's while it is down (a bad image rolled back,
  // a learner that never started): restarting it costs nothing. Down by its pod too (not Ready):
  // a member that only missed one status call is up, and restarting it would take a second
  // member down beside the one the rollout restarts. A member with no pod has nothing to restart.
  const wrong = members.find((m) => {
    const pod = pods.get(m.name);
    return !!pod && !healthy(m) && !pod.ready && outdated(pod) && !pod.deleting;
  });
  if (wrong) return { kind: 'deletePod', member: wrong.name, reason: 'Upgrade' };

  // A member that never started, whose pod joins with another member list than there is now (a
  // member left after its pod was made): etcd refuses to join with it ("member count is unequal",
  // "no match found for existing member") at every restart of the container, so it would never
  // start. Its pod goes, and is made again (above) with the member list of now.
  const misjoined = members.find((m) => {
    const join = pods.get(m.name)?.join;
    return (
      !m.started &&
      !pods.get(m.name)?.deleting &&
      join?.state === 'existing' &&
      !sameNames(join.initialCluster, names)
    );
  });
  if (misjoined) return { kind: 'deletePod', member: misjoined.name, reason: 'Rejoin' };

  // Members whose volume is being deleted still hold their data: replace before removing them.
  const doomed = voters.filter((m) => o.volumesDeleting.includes(m.name));
  const target = o.size + (doomed.length > 0 ? 1 : 0);

  const learner = members.find((m) => m.learner);
  if (learner) {
    // No longer wanted (the size went back down while it was starting, say, on a pod that never
    // gets scheduled): removing a learner never costs the quorum, and waiting on it would block
    // every other step for good. Its pod and volume go as strays.
    if (voters.length >= target && (!learner.started || !healthy(learner)))
      return { kind: 'removeMember', member: learner.name, id: learner.id, reason: 'ScaleDown' };
    if (!learner.started || !healthy(learner))
      return { kind: 'wait', reason: 'LearnerStarting', message: `${learner.name} is starting` };
    return { kind: 'promote', member: learner.name, id: learner.id };
  }

  if (voters.length < target) {
    if (!allHealthy) return unhealthy(members, healthy);
    return { kind: 'addLearner', member: nextMemberName(o) };
  }

  if (voters.length > o.size) {
    if (!allHealthy) return unhealthy(members, healthy);
    // A member whose volume is going, else the newest that does not lead: never the leader.
    const order = [...voters].sort((a, b) => byOrdinal(o.memberPrefix)(b.name, a.name));
    const victim =
      doomed.find((m) => m.id !== o.leader) ?? order.find((m) => m.id !== o.leader && !doomed.includes(m));
    if (victim)
      return {
        kind: 'removeMember',
        member: victim.name,
        id: victim.id,
        reason: doomed.includes(victim) ? 'VolumeLost' : 'ScaleDown',
      };
    // Only the leader's volume is going: hand leadership over first.
    const to = voters.find((m) => m.id !== o.leader);
    if (leaderMember && to)
      return { kind: 'moveLeader', from: leaderMember.id, to: to.id, toMember: to.name };
  }

  const stale = members.filter((m) => outdated(pods.get(m.name)));
  if (stale.length > 0) {
    if (!allHealthy) return unhealthy(members, healthy);
    const follower = stale
      .sort((a, b) => byOrdinal(o.memberPrefix)(a.name, b.name))
      .find((m) => m.id !== o.leader);
    if (follower) return { kind: 'deletePod', member: follower.name, reason: 'Upgrade' };
    // Only the leader runs the old image: hand leadership to an upgraded member first.
    const to = voters.find((m) => m.id !== o.leader);
    if (leaderMember && to)
      return { kind: 'moveLeader', from: leaderMember.id, to: to.id, toMember: to.name };
    if (leaderMember) return { kind: 'deletePod', member: leaderMember.name, reason: 'Upgrade' };
  }

  if (!allHealthy) return unhealthy(members, healthy);
  const unready = members.filter((m) => pods.get(m.name)?.ready === false);
  if (unready.length > 0)
    return {
      kind: 'wait',
      reason: 'PodsNotReady',
      message: `${unready.map((m) => m.name).join(', ')} not ready yet: the client Service does not route to ${unready.length === 1 ? 'it' : 'them'}`,
    };
  if ((o.alarms ?? []).length > 0)
    return {
      kind: 'wait',
      reason: 'Alarm',
      message: `etcd raised ${(o.alarms ?? []).join(', ')}: members refuse clients until it is resolved`,
    };
  return { kind: 'converged' };
};

const sameNames = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

const unhealthy = (members: readonly MemberState[], healthy: (m: MemberState) => boolean): Step => ({
  kind: 'wait',
  reason: 'MembersUnhealthy',
  message: `waiting for ${members
    .filter((m) => !healthy(m))
    .map((m) => m.name)
    .join(', ')} to be healthy before changing membership or version`,
});
