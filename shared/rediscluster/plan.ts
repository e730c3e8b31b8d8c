import { REDIS_PORT, type Role } from './names.ts';
import type { Instance } from './probe.ts';

export type Command = { pod: string; ip: string; args: string[] };
export type LabelChange = { pod: string; role: Role | null };

export type TopologyPlan = {
  /** The pod that should be master (status.master after this). */
  master: string | undefined;
  /** Why the master changed, when it did. */
  change?: { from: string | undefined; reason: 'Initial' | 'MasterBehind' | 'Adopted' };
  commands: Command[];
  /** Pods whose role label is to change, removals first (never two masters in the Service). */
  labels: LabelChange[];
};

const reachable = (i: Instance) => i.replication !== undefined && !i.terminating;
const offsetOf = (i: Instance) => i.replication?.offset ?? -1;

/**
 * Who is master and what each instance must do. The status is the record of who is master; the
 * servers are only believed where the record has nothing to say (first start, lost status). A
 * master that came back with less data than a replica has (restarted empty) is replaced by the
 * most advanced replica instead of being followed: following it would wipe the replicas.
 */
export const planTopology = (
  instances: readonly Instance[],
  statusMaster: string | undefined,
): TopologyPlan => {
  let master = instances.some((i) => i.pod === statusMaster) ? statusMaster : undefined;
  let change: TopologyPlan['change'];
  if (!master) {
    const live = instances.filter(reachable);
    // A master that has replicas attached is adopted (status lost); else the lowest ordinal.
    const adopted = live
      .filter((i) => i.replication?.role === 'master' && i.replication.replicas.length > 0)
      .sort(
        (a, b) =>
          (b.replication?.role === 'master' ? b.replication.replicas.length : 0) -
          (a.replication?.role === 'master' ? a.replication.replicas.length : 0),
      )[0];
    master = adopted?.pod ?? instances[0]?.pod;
    if (master) change = { from: statusMaster, reason: adopted ? 'Adopted' : 'Initial' };
  }
  let m = instances.find((i) => i.pod === master);
  // The recorded master follows another master with its link up: a switchover whose record was
  // not written (the function died in between). The servers agree with each other: adopt it.
  const mr = m?.replication;
  if (m && reachable(m) && mr?.role === 'replica' && mr.linkUp) {
    const leader = instances.find(
      (i) => i !== m && reachable(i) && i.ip === mr.masterHost && i.replication?.role === 'master',
    );
    if (leader) {
      change = { from: master, reason: 'Adopted' };
      master = leader.pod;
      m = leader;
    }
  }
  // Only a master that came back fenced (a replica of nothing, after a restart) is compared: a
  // serving master is never behind its replicas.
  if (m && reachable(m) && m.replication?.role === 'replica' && !m.replication.linkUp) {
    const ahead = instances
      .filter((i) => i !== m && reachable(i) && offsetOf(i) > Math.max(0, offsetOf(m as Instance)))
      .sort((a, b) => offsetOf(b) - offsetOf(a) || a.ordinal - b.ordinal)[0];
    // It restarted from an older snapshot, or empty: following it would wipe the replicas.
    if (ahead) {
      change = { from: master, reason: 'MasterBehind' };
      master = ahead.pod;
      m = ahead;
    }
  }

  const commands: Command[] = [];
  const confirmed = new Map<string, Role>();
  if (m && reachable(m) && m.ip) {
    if (m.replication?.role !== 'master')
      commands.push({ pod: m.pod, ip: m.ip, args: ['REPLICAOF', 'NO', 'ONE'] });
    confirmed.set(m.pod, 'master');
    for (const i of instances) {
      if (i === m || !reachable(i) || !i.ip) continue;
      const r = i.replication;
      const follows = r?.role === 'replica' && r.masterHost === m.ip && r.masterPort === REDIS_PORT;
      if (!follows) commands.push({ pod: i.pod, ip: i.ip, args: ['REPLICAOF', m.ip, String(REDIS_PORT)] });
      confirmed.set(i.pod, 'replica');
    }
  } else {
    // The master is not reachable: replicas that already follow it keep their label (they serve
    // reads); anything else is unlabelled until it is known to follow the master.
    for (const i of instances) {
      const r = i.replication;
      if (
        i.pod !== master &&
        reachable(i) &&
        r?.role === 'replica' &&
        i.labelledRole === 'replica' &&
        r.masterHost === m?.ip
      )
        confirmed.set(i.pod, 'replica');
    }
  }

  const removals: LabelChange[] = [];
  const additions: LabelChange[] = [];
  for (const i of instances) {
    const want = confirmed.get(i.pod) ?? null;
    if ((i.labelledRole ?? null) === want) continue;
    (want === null || i.labelledRole === 'master' ? removals : additions).push({ pod: i.pod, role: want });
  }
  return { master, ...(change ? { change } : {}), commands, labels: [...removals, ...additions] };
};
