import type { EtcdCluster } from '../api/generated.ts';
import { memberIdToHex } from '../etcd/ids.ts';
import type { Seen } from './observe.ts';
import type { Step } from './plan.ts';

type Status = NonNullable<EtcdCluster['status']>;

/** Lowest first: during an upgrade the cluster runs what its oldest member runs. */
const byVersion = (a: string, b: string) =>
  a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' });

/** The status a run writes from what it saw and where it stopped. */
export const statusFrom = (c: EtcdCluster, s: Status, seen: Seen, step: Step): Status => {
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
        : !members || healthyVoters.length < voters.length
          ? 'Degraded'
          : 'Ready';
  return {
    ...s,
    phase,
    ...(leader ? { leader } : {}),
    size: voters.length,
    readyMembers: healthyVoters.length,
    ready: `${healthyVoters.length}/${c.spec.size ?? 3}`,
    ...(versions[0] ? { version: versions[0] } : {}),
    // The member list as last seen (kept when none answered: it names the volumes to restart on).
    members: members
      ? members.map((m) => {
          const st = seen.statuses.get(m.name);
          return {
            name: m.name,
            id: memberIdToHex(m.id),
            learner: m.learner,
            healthy: !!o.pods.find((p) => p.member === m.name)?.healthy,
            ...(st ? { version: st.version, raftIndex: st.raftIndex, dbSize: st.dbSize } : {}),
          };
        })
      : (s.members ?? []),
  };
};
