import { isHistory } from '../redis/info.ts';
import { masterBehind } from './health.ts';
import { REDIS_PORT, type Role } from './names.ts';
import type { Instance } from './probe.ts';
import { type History, historyIds, mostAdvancedFirst } from './promotion.ts';

export type Command = { pod: string; ip: string; args: string[] };
export type LabelChange = { pod: string; role: Role | null };

export type TopologyPlan = {
  /** The pod that should be master (status.master after this). */
  master: string | undefined;
  /** Why the record changes, when it does: the first choice, or servers that already swapped. */
  change?: { from: string | undefined; reason: 'Initial' | 'Adopted' };
  commands: Command[];
  /** Pods whose role label is to change, removals first (never two masters in the Service). */
  labels: LabelChange[];
  /** Why the topology cannot be completed now (shown in Reconciled); empty when it can. */
  blocked: string[];
};

const reachable = (i: Instance) => i.replication !== undefined && !i.terminating;

/**
 * Whether `i` may be made to follow `m` without wiping data only it has: it holds no keys, or
 * its data belongs to m's replication history (the same id, or the one m continued from after a
 * promotion — a former master that rejoins; writes it took after the promotion and never passed
 * on are the window the failover docs describe). An instance of another history — an old volume,
 * a master promoted empty — is never made to follow; one restarted from its append-only file is
 * (restartedWithoutHistory).
 */
export const canFollow = (i: Instance, m: Instance, history?: History) => {
  if (i.keys === 0 || restartedWithoutHistory(i)) return true;
  const r = i.replication;
  const mr = m.replication;
  if (!r || !mr) return false;
  // Data a restore replaced (superseded) may be overwritten too: the restore was asked for.
  // Only ids that name data: a replica reports the zero id as its replid2 when it has none, and
  // two such would otherwise count as one history.
  const ids = [mr.replid, mr.replid2, ...historyIds(history), ...(history?.superseded ?? [])].filter(
    isHistory,
  );
  return ids.includes(r.replid) || (isHistory(r.replid2) && ids.includes(r.replid2));
};

/**
 * An instance that holds more of the master's own history than the master: the same replication
 * id at a higher offset, its link down (a linked replica's offset is the master's stream, and a
 * probe a moment later may just see more of it). Made to follow, it would full-sync from the
 * master and drop the difference — acknowledged writes. Only a master that restarted from an
 * older snapshot yet serves as master gets here; health's rules (masterBehind) handle the rest.
 */
export const aheadOf = (i: Instance, m: Instance) => {
  const r = i.replication;
  const mr = m.replication;
  if (!r || !mr || i.keys === 0 || r.replid !== mr.replid || r.offset <= mr.offset) return undefined;
  if (r.role === 'replica' && r.linkUp) return undefined;
  return { offset: r.offset, masterOffset: mr.offset };
};

/**
 * A server that started from an append-only file: Redis keeps the replication id only in an RDB
 * file, so it comes back at offset 1 of a fresh id, never connected since — an id no history
 * knows. Its data is its own disk's, a copy of this cluster's (a replica's, or a former master's,
 * whose writes after a failover are the window the failover docs describe): it may follow.
 * Servers with a real other history (an RDB with another id, a master promoted by hand) keep
 * their offsets and ids and are still never made to follow.
 */
export const restartedWithoutHistory = (i: Instance) => {
  const r = i.replication;
  return (
    r?.role === 'replica' &&
    !r.linkUp &&
    r.linkDownSeconds === Number.POSITIVE_INFINITY &&
    r.offset <= 1 &&
    !isHistory(r.replid2)
  );
};

/**
 * The first master of a cluster with no record: a running master with replicas attached (the
 * record was lost), else the instance with the most data — a cluster re-created on its old
 * volumes must not follow an empty instance — and only once every instance answers, since the
 * one that does not may be the one with the data.
 */
const firstMaster = (instances: readonly Instance[], desired: number) => {
  const live = instances.filter(reachable);
  const adopted = live
    .filter((i) => i.replication?.role === 'master' && i.replication.replicas.length > 0)
    .sort(
      (a, b) =>
        (b.replication?.role === 'master' ? b.replication.replicas.length : 0) -
        (a.replication?.role === 'master' ? a.replication.replicas.length : 0),
    )[0];
  if (adopted) return { pod: adopted, reason: 'Adopted' as const };
  const expected = instances.filter((i) => i.ordinal < desired);
  const silent = expected.filter((i) => !reachable(i)).map((i) => i.pod);
  if (expected.length < desired || silent.length > 0) return { waitingFor: silent };
  const first = [...expected].sort(mostAdvancedFirst)[0];
  return first ? { pod: first, reason: 'Initial' as const } : { waitingFor: [] };
};

/**
 * The instances that are up but do not answer while the recorded master answers fenced (a replica
 * of nothing) with less of the cluster's current history than the record says it had: one of them
 * may hold the rest (a replica still loading, a probe missed). Reinstating the master now would make it,
 * once it answers, follow the master and drop what only it holds. Undefined when every instance
 * answers (none holds more than the master: what it has is all there is) or the master is not
 * short of the record.
 */
export const shortOfRecord = (instances: readonly Instance[], m: Instance | undefined, history?: History) => {
  const r = m?.replication;
  if (!m || !reachable(m) || r?.role !== 'replica' || r.linkUp || !history?.id) return undefined;
  if (r.replid !== history.id || r.offset >= (history.offset ?? 0)) return undefined;
  // Only a server that is up and does not answer yet (loading its data set, a probe missed): its
  // pod is Ready (a TCP probe passes while Redis loads) and not going. One whose pod is gone, not
  // Ready or terminating (a lost node, a crash loop) may never answer; waiting on it would keep
  // the cluster without a master for good.
  const silent = instances
    .filter((i) => i !== m && !reachable(i) && i.ip && i.podReady && !i.terminating)
    .map((i) => i.pod);
  return silent.length > 0 ? silent : undefined;
};

/**
 * Who is master and what each instance must do. The status is the record of who is master, and
 * reconcile never changes it to another instance on its own: losing a master (its pod absent,
 * its server silent, or back with less data than a replica) is health's to handle, with the
 * failover rules. Reconcile only makes the first choice, adopts a switchover the servers already
 * made, puts a fenced master that came back whole in its place, and makes the others follow the
 * master — never one whose data it would wipe (canFollow).
 */
export const planTopology = (
  instances: readonly Instance[],
  statusMaster: string | undefined,
  desired = instances.length,
  /** status.replication: the ids the cluster's data has had. */
  history?: History,
): TopologyPlan => {
  const blocked: string[] = [];
  let master = statusMaster;
  let change: TopologyPlan['change'];
  if (!master) {
    const first = firstMaster(instances, desired);
    if ('pod' in first && first.pod) {
      master = first.pod.pod;
      change = { from: undefined, reason: first.reason };
    } else
      blocked.push(
        `choosing the first master once every instance answers${first.waitingFor?.length ? ` (waiting for ${first.waitingFor.join(', ')})` : ''}`,
      );
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
  const behind = masterBehind(instances, m, history);
  const short = behind ? undefined : shortOfRecord(instances, m, history);
  if (m && behind)
    blocked.push(
      `${m.pod} came back with less data than ${behind.pod}: it stays fenced; health decides on a failover`,
    );
  else if (m && short)
    blocked.push(
      `${m.pod} came back at offset ${m.replication?.offset} of the ${history?.offset} recorded, and ${short.join(', ')} ${short.length > 1 ? 'do' : 'does'} not answer, which may hold the rest: it stays fenced until every instance answers`,
    );
  else if (master && !(m && reachable(m))) blocked.push(`master ${master} does not answer`);

  const commands: Command[] = [];
  const confirmed = new Map<string, Role>();
  if (m && reachable(m) && m.ip && !behind && !short) {
    if (m.replication?.role !== 'master')
      commands.push({ pod: m.pod, ip: m.ip, args: ['REPLICAOF', 'NO', 'ONE'] });
    confirmed.set(m.pod, 'master');
    for (const i of instances) {
      if (i === m || !reachable(i) || !i.ip) continue;
      const r = i.replication;
      const follows = r?.role === 'replica' && r.masterHost === m.ip && r.masterPort === REDIS_PORT;
      if (!follows) {
        const ahead = aheadOf(i, m);
        if (ahead) {
          blocked.push(
            `${i.pod} is ahead of master ${m.pod} in the same replication history (offset ${ahead.offset} > ${ahead.masterOffset}); it is not made to follow it, which would drop what only it holds: health decides`,
          );
          continue;
        }
        if (!canFollow(i, m, history)) {
          blocked.push(
            `${i.pod} holds data of another replication history than master ${m.pod} (${i.keys} keys, history ${i.replication?.replid.slice(0, 8)}/${i.replication?.role === 'replica' ? i.replication.replid2.slice(0, 8) : ''} vs ${m.replication?.replid.slice(0, 8)}/${m.replication?.replid2?.slice(0, 8) ?? ''}); it is not made to follow it, which would wipe them`,
          );
          continue;
        }
        commands.push({ pod: i.pod, ip: i.ip, args: ['REPLICAOF', m.ip, String(REDIS_PORT)] });
      }
      confirmed.set(i.pod, 'replica');
    }
  } else {
    // The master does not serve: replicas that already follow it keep their label (they serve
    // reads); anything else is unlabelled until it is known to follow the master.
    for (const i of instances) {
      const r = i.replication;
      if (
        i.pod !== master &&
        reachable(i) &&
        r?.role === 'replica' &&
        i.labelledRole === 'replica' &&
        // followed the master until it went away (its pod, and so its address, may be gone)
        (m ? r.masterHost === m.ip : true)
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
  return {
    master,
    ...(change ? { change } : {}),
    commands,
    labels: [...removals, ...additions],
    blocked,
  };
};
