import { type EtcdCluster, EtcdClusterSpecDefaults } from '../api/generated.ts';
import { memberIdToHex } from '../etcd/ids.ts';
import { LAG_GRACE_MS, LAG_THRESHOLD, type Lagging, lagOf, type MemberLag } from './lag.ts';
import type { Seen } from './observe.ts';
import type { Step } from './plan.ts';

type Status = NonNullable<EtcdCluster['status']>;

/** Lowest first: during an upgrade the cluster runs what its oldest member runs. */
const byVersion = (a: string, b: string) =>
  a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' });

/**
 * The status a run writes from what it saw and where it stopped; `lags` from lagOf. A member's
 * lastDefragmentation is kept from the status as it was.
 */
export const statusFrom = (
  c: EtcdCluster,
  s: Status,
  seen: Seen,
  step: Step,
  lags: ReadonlyMap<string, MemberLag> = new Map(),
): Status => {
  const o = seen.observed;
  const members = o.members;
  const voters = (members ?? []).filter((m) => !m.learner);
  const healthyVoters = voters.filter((m) => o.pods.find((p) => p.member === m.name)?.healthy);
  const leader = members?.find((m) => m.id === o.leader)?.name;
  const versions = [...seen.statuses.values()].map((x) => x.version).sort(byVersion);
  const phase: Status['phase'] =
    step.kind === 'converged'
      ? 'Ready'
      : !o.bootstrapped
        ? 'Creating'
        : !members ||
            healthyVoters.length < Math.max(voters.length, c.spec.size ?? EtcdClusterSpecDefaults.size)
          ? 'Degraded'
          : 'Ready';
  // Nothing known is said: no leader while none answers (the printer column must not show a stale one).
  const { leader: _stale, ...rest } = s;
  return {
    ...rest,
    phase,
    ...(leader ? { leader } : {}),
    size: voters.length,
    readyMembers: healthyVoters.length,
    ready: `${healthyVoters.length}/${c.spec.size ?? EtcdClusterSpecDefaults.size}`,
    ...(versions[0] ? { version: versions[0] } : {}),
    // The member list as last seen (kept when none answered: it names the volumes to restart on).
    members: members
      ? members.map((m) => {
          const st = seen.statuses.get(m.name);
          const lag = lags.get(m.name);
          const defragmented = s.members?.find((x) => x.name === m.name)?.lastDefragmentation;
          return {
            name: m.name,
            id: memberIdToHex(m.id),
            learner: m.learner,
            healthy: !!o.pods.find((p) => p.member === m.name)?.healthy,
            ...(st
              ? {
                  version: st.version,
                  raftIndex: st.raftIndex,
                  dbSize: st.dbSize,
                  dbSizeInUse: st.dbSizeInUse,
                }
              : {}),
            ...(lag?.lag !== undefined ? { lag: lag.lag } : {}),
            ...(lag?.laggingSince ? { laggingSince: lag.laggingSince } : {}),
            ...(defragmented ? { lastDefragmentation: defragmented } : {}),
          };
        })
      : (s.members ?? []),
  };
};

/** Each member's lag from what a run saw, and since when it lags from the status as it was. */
export const lagsOf = (seen: Seen, previous: Status['members'], now: Date) =>
  lagOf({
    members: seen.observed.members ?? [],
    raftIndex: new Map([...seen.statuses].map(([name, st]) => [name, st.raftIndex])),
    leader: seen.observed.leader,
    since: new Map(
      (previous ?? []).flatMap((m) => (m.name && m.laggingSince ? [[m.name, m.laggingSince] as const] : [])),
    ),
    now,
  });

/**
 * Healthy: every member answers and has a leader, none lags behind the leader (`lagging`, from
 * lagOf), and no alarm is raised. Quorum lost is said at once (reason QuorumLost), not after
 * retries: no member answered with the member list.
 */
export const healthOf = (
  seen: Seen,
  lagging: readonly Lagging[] = [],
): { status: 'True' | 'False'; reason: string; message: string } => {
  const o = seen.observed;
  // The pods of a majority pass their readiness probe (their members run) yet none answered
  // Tideway even a status request: what is lost is Tideway's way to them (a NetworkPolicy on
  // 2379, a function outside the pod network), not necessarily the quorum. Members that answer
  // their status but not the member list have lost the quorum among themselves.
  const readyPods = o.pods.filter((p) => p.ready && !p.deleting).length;
  if (
    !o.members &&
    o.bootstrapped &&
    o.lastKnown.length > 0 &&
    readyPods > o.lastKnown.length / 2 &&
    seen.statuses.size === 0
  )
    return {
      status: 'False',
      reason: 'Unreachable',
      message: `no member answers Tideway with the member list, though ${readyPods} of ${o.lastKnown.length} member pods are Ready: can Tideway's functions reach port 2379 of the pods (a NetworkPolicy)?`,
    };
  if (!o.members)
    return o.bootstrapped
      ? {
          status: 'False',
          reason: 'QuorumLost',
          message: `no member answers with the member list: a majority of ${o.lastKnown.length} is not running or cannot reach each other (${o.pods.filter((p) => p.healthy).length} members have a leader)`,
        }
      : {
          status: 'False',
          reason: 'Bootstrapping',
          message: 'the first members have not formed the cluster yet',
        };
  const alarms = seen.alarms ?? [];
  if (alarms.length > 0)
    return {
      status: 'False',
      reason: alarms.some((a) => a.alarm === 'NOSPACE') ? 'NoSpace' : 'Alarm',
      message: `alarms raised: ${alarms.map((a) => `${a.alarm} on ${a.member}`).join(', ')}${
        alarms.some((a) => a.alarm === 'NOSPACE')
          ? ' (the database reached its quota: writes are refused until it is compacted, defragmented and the alarm disarmed)'
          : ''
      }`,
    };
  const strangers = o.foreignMembers ?? [];
  if (strangers.length > 0)
    return {
      status: 'False',
      reason: 'ForeignMember',
      message: `${strangers.length} member${strangers.length > 1 ? 's' : ''} not made by Tideway (${strangers.map((f) => f.name || f.peerURLs.join(' ') || f.id).join(', ')}) vote${strangers.length > 1 ? '' : 's'} in the quorum; Tideway cannot see whether ${strangers.length > 1 ? 'they run' : 'it runs'}, so it cannot say the cluster can lose a member`,
    };
  const down = o.members.filter((m) => !o.pods.find((p) => p.member === m.name)?.healthy);
  if (down.length > 0)
    return {
      status: 'False',
      reason: 'MembersUnhealthy',
      message: `${down.map((m) => m.name).join(', ')} ${down.length === 1 ? 'does' : 'do'} not answer or ${down.length === 1 ? 'has' : 'have'} no leader`,
    };
  if (lagging.length > 0)
    return {
      status: 'False',
      reason: 'MemberLagging',
      message: `${lagging
        .map((l) => `${l.name} is ${l.lag} raft entries behind the leader (since ${l.since})`)
        .join(
          ', ',
        )}: more than ${LAG_THRESHOLD} for over ${LAG_GRACE_MS / 1000} s — a slow disk or network, or a member receiving a snapshot`,
    };
  return { status: 'True', reason: 'Healthy', message: `${o.members.length} members answer, one leader` };
};
