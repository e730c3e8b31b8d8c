import { parseDuration } from '../api/duration.ts';
import { type RedisCluster, RedisClusterSpecDefaults } from '../api/generated.ts';
import type { ConditionInput } from '../kube/conditions.ts';
import { FAILOVER_AFTER_MIN } from './admission.ts';
import { REDIS_PORT } from './names.ts';
import type { Instance } from './probe.ts';
import { type History, historyIds, promotionCandidates, withoutHistory } from './promotion.ts';

export type Assessment = {
  healthy: ConditionInput;
  /** When the master was first found unreachable (kept across runs); undefined when it serves. */
  masterUnreachableSince: string | undefined;
  /** Promote `to` now: the master has been lost for failover.after. */
  failover?: { from: string; to: string; reason: 'MasterUnreachable' | 'MasterBehind' };
  /** The replication history the serving master holds, to record (status.replication). */
  history?: History;
  /** Look again this soon: the failover clock is running. */
  recheckMs?: number;
};

const answers = (i: Instance | undefined) => i?.replication !== undefined && !i.terminating;

/**
 * A recorded master that answers as a replica of nothing (it restarted fenced) while another
 * instance of the cluster's replication history (status.replication: its id or an earlier one)
 * holds more of the data: it restarted from an older snapshot, or empty. Reinstating it would wipe
 * the replicas, so it counts as lost, like one that does not answer. An instance of another
 * history (an old volume, a server promoted empty elsewhere) says nothing about this data,
 * whatever its offset: it makes no master lost. With no history recorded yet, any instance counts.
 * And a master that holds no keys, whose id and offset do not place it in the history, is behind
 * any instance of the history (or restarted from its append-only file) that holds some: after a
 * restart from an append-only file alone a server's id and offset (1) are those of an empty one,
 * and reinstating the empty master would leave the data on the others out of service. One the
 * history places (an RDB keeps its id and offset) is judged by offsets alone: no keys there is
 * the data at that point.
 */
export const masterBehind = (instances: readonly Instance[], m: Instance | undefined, history?: History) => {
  const r = m?.replication;
  if (!m || !answers(m) || r?.role !== 'replica' || r.linkUp) return undefined;
  const ids = historyIds(history);
  const ofHistory = (i: Instance) =>
    ids.length === 0 ||
    ids.includes(i.replication?.replid ?? '') ||
    ids.includes(i.replication?.replid2 ?? '');
  const others = instances.filter((i) => i !== m && answers(i));
  // Its id and offset place it in the history (an RDB keeps both): an empty data set there is
  // the data at that point (a drained queue), and the offsets alone judge it.
  const placed = ids.length > 0 && (ids.includes(r.replid) || ids.includes(r.replid2)) && r.offset > 1;
  return (
    others.find((i) => ofHistory(i) && (i.replication?.offset ?? 0) > Math.max(0, r.offset)) ??
    (m.keys === 0 && !placed
      ? // Keys say more than an id and offset that say nothing, but only of this cluster's data
        // (or a server's from its append-only file, which keeps no id): an old volume of
        // another history holds no part of it.
        others.find((i) => (i.keys ?? 0) > 0 && (ofHistory(i) || withoutHistory(i.replication, ids)))
      : undefined)
  );
};

/** An instance that replicates from `m`, at its address, with its link up: `m` lives. */
const fedBy = (instances: readonly Instance[], m: Instance | undefined) =>
  m?.ip
    ? instances.find(
        (i) =>
          i !== m &&
          answers(i) &&
          i.replication?.role === 'replica' &&
          i.replication.linkUp &&
          i.replication.masterHost === m.ip &&
          i.replication.masterPort === REDIS_PORT,
      )
    : undefined;

/**
 * How long a process's own sight of a master serving dates a later outage. Longer than a late
 * first look, and than an outage of the bus or the API server that kept every health run away
 * while the master died (a lost node that held both: minutes of eviction and volume moves), whose
 * faithful replicas would otherwise all count as cut off before the master was lost, for good.
 * Far shorter than the days a process may stop watching a cluster and take it back, whose old
 * sight would let a replica cut off for a day qualify. Between the two, the choice is a bound.
 */
export const SERVING_MEMORY_MS = 60 * 60_000;

/** A monotonic clock in milliseconds: it never jumps with the wall clock (performance.now). */
export type Monotonic = () => number;

export type OutageWatch = {
  /**
   * How long this process has itself seen the outage that the record dates `since` (its first
   * look: 0). A new record (another master, another `since`) starts over.
   */
  observe(cluster: string, master: string, since: string): number;
  /**
   * How long ago this process last saw `master` serve, or undefined when it never did or not
   * within SERVING_MEMORY_MS: when the master was last known alive, which its first look at the
   * outage may be well after (a late tick, a busy lock).
   */
  silence(cluster: string, master: string): number | undefined;
  /** The master answers: the next outage starts over. */
  forget(cluster: string): void;
  /** The master serves as one: known alive now. */
  serving(cluster: string, master: string): void;
};

/**
 * The failover clock of one process. `status.failover.masterUnreachableSince` is written by one
 * health replica with its wall clock and read by another with its own: a clock running behind
 * the writer's would see the time as already up and fail over on its first look, one running
 * ahead would wait for as long as it is ahead. So the time that decides is only ever measured by
 * one process, on its monotonic clock, from its own first look at the outage the record names.
 * Bounded: a cluster not seen again is dropped first once `max` clusters are watched.
 */
export const outageWatch = (monotonic: Monotonic = () => performance.now(), max = 10_000): OutageWatch => {
  const seen = new Map<string, { master: string; since: string; at: number }>();
  const alive = new Map<string, { master: string; at: number }>();
  const put = <T>(m: Map<string, T>, cluster: string, v: T) => {
    m.delete(cluster);
    if (m.size >= max) m.delete(m.keys().next().value ?? '');
    m.set(cluster, v);
  };
  return {
    observe: (cluster, master, since) => {
      const e = seen.get(cluster);
      if (e && e.master === master && e.since === since) return monotonic() - e.at;
      put(seen, cluster, { master, since, at: monotonic() });
      return 0;
    },
    silence: (cluster, master) => {
      const e = alive.get(cluster);
      const ms = e && e.master === master ? monotonic() - e.at : undefined;
      // Older than a late look can be: this process stopped watching the cluster (its share went
      // to another replica and came back). Dating the outage from then would let a replica cut
      // off for days qualify as having followed the master to the end.
      return ms !== undefined && ms <= SERVING_MEMORY_MS ? ms : undefined;
    },
    forget: (cluster) => void seen.delete(cluster),
    serving: (cluster, master) => put(alive, cluster, { master, at: monotonic() }),
  };
};

/** This process's failover clock (health's replicas each keep their own). */
const processOutages = outageWatch();

/**
 * Health of a cluster from one probe of every instance, and whether the failover clock ran out.
 * The master is lost when its server does not answer (pod gone, process down, network), or when
 * it came back with less data than a replica; a master that answers fenced with all the data is
 * reconcile's to put back, not a reason to fail over. Only a replica of the cluster's replication
 * history that followed the master until it was lost is promoted (promotionCandidates); with none,
 * the cluster stays without a master and says so, rather than lose data.
 */
export const assessHealth = (
  rc: RedisCluster,
  instances: readonly Instance[],
  now: Date,
  outages: OutageWatch = processOutages,
): Assessment => {
  const masterName = rc.status?.master;
  const desired = rc.spec.replicas ?? RedisClusterSpecDefaults.replicas;
  const m = instances.find((i) => i.pod === masterName);
  const since = rc.status?.failover?.masterUnreachableSince;
  const ahead = masterBehind(instances, m, rc.status?.replication);
  const clusterKey = rc.metadata.uid ?? `${rc.metadata.namespace}/${rc.metadata.name}`;

  if (!answers(m) || ahead) {
    // The master was lost after this process last saw it serve: replicas that lost their link
    // since then followed it to the end, however late this first look came (a late tick, a busy
    // lock). A new record dates the outage from then, for the health replicas that did not see it.
    const silentMs = outages.silence(clusterKey, masterName ?? '') ?? 0;
    const start = since ?? new Date(now.getTime() - silentMs).toISOString();
    const after = rc.spec.failover?.after ?? RedisClusterSpecDefaults.failover.after;
    // Never below the floor admission enforces, whatever an older object says.
    const afterMs = Math.max(parseDuration(after), parseDuration(FAILOVER_AFTER_MIN));
    // What decides: this process's own watch of this outage, skew-free. The record's age by this
    // clock only widens how long ago a candidate may have lost its link (a process that took
    // over late has watched less than the replicas have been cut off).
    const downMs = outages.observe(clusterKey, masterName ?? '', start);
    const recordedMs = now.getTime() - Date.parse(start);
    const enabled = rc.spec.failover?.enabled ?? RedisClusterSpecDefaults.failover.enabled;
    const { safe, refused } = promotionCandidates(instances, {
      master: masterName,
      history: rc.status?.replication,
      masterDownSeconds: Math.max(downMs, recordedMs, silentMs) / 1000,
      ...(ahead ? { masterOffset: m?.replication?.offset ?? 0 } : {}),
    });
    // A replica still replicating from the master with its link up: the master lives and serves
    // it, cut off from Tideway only (a partition). Whichever replica took over, the master would
    // go on taking writes beside it — two masters, and the writes of one lost when they meet.
    const fed = ahead ? undefined : fedBy(instances, m);
    const candidate = fed ? undefined : safe[0];
    const healthy = (reason: string, message: string): ConditionInput => ({
      type: 'Healthy',
      status: 'False',
      reason,
      message,
    });
    const down = ahead
      ? `master ${masterName} came back with less data than ${ahead.pod} (${m?.keys === 0 && (ahead.keys ?? 0) > 0 ? `no keys, ${ahead.keys} there` : `offset ${m?.replication?.offset} < ${ahead.replication?.offset}`}) and is kept out of service`
      : `master ${masterName} unreachable for ${(downMs / 1000).toFixed(1)}s${m?.error ? ` (${m.error})` : ''}`;
    const base = { masterUnreachableSince: start };
    const lost = ahead ? 'MasterBehind' : 'MasterUnreachable';
    if (fed)
      return {
        ...base,
        healthy: healthy(
          'MasterCutOff',
          `${down}; but ${fed.pod} still replicates from it with its link up: it lives, cut off from Tideway only, and no replica takes over while it feeds one (two masters would take writes)`,
        ),
      };
    // Failover off is a person's decision to make: say which one they have.
    if (!enabled)
      return {
        ...base,
        healthy: healthy(
          lost,
          `${down}; automatic failover is disabled (spec.failover.enabled): ${
            candidate
              ? `set it to true to promote ${candidate.pod}${ahead ? '' : `, or bring ${masterName} back`}`
              : `no replica could take over without losing data (${refused.map((r) => `${r.pod} ${r.why}`).join('; ') || 'there is none'}); ${ahead ? 'an up-to-date replica must return' : `bring ${masterName} back`}`
          }`,
        ),
      };
    if (!candidate)
      return {
        ...base,
        healthy: healthy(
          'NoSafeCandidate',
          `${down}; no replica can take over without losing data: ${refused.map((r) => `${r.pod} ${r.why}`).join('; ') || 'there is none'}. The cluster stays without a master until ${masterName} or an up-to-date replica returns`,
        ),
      };
    if (downMs >= afterMs && masterName)
      return {
        ...base,
        healthy: healthy('FailingOver', `${down}; promoting ${candidate.pod}`),
        failover: { from: masterName, to: candidate.pod, reason: lost },
      };
    return {
      ...base,
      healthy: healthy(lost, `${down}; ${candidate.pod} takes over after ${after}`),
      recheckMs: Math.max(100, Math.min(1000, afterMs - downMs)),
    };
  }

  outages.forget(clusterKey);
  if (m?.replication?.role === 'master' && masterName) outages.serving(clusterKey, masterName);
  const problems: string[] = [];
  let reason = 'Replicating';
  const note = (r: string, text: string) => {
    if (reason === 'Replicating') reason = r;
    problems.push(text);
  };
  if (m?.replication?.role !== 'master') note('MasterNotServing', `master ${m?.pod} answers as a replica`);
  for (const i of instances) {
    if (i === m || i.ordinal >= desired) continue;
    const r = i.replication;
    if (!answers(i)) note('InstanceUnreachable', `${i.pod} does not answer${i.error ? ` (${i.error})` : ''}`);
    else if (r?.role !== 'replica' || r.masterHost !== m?.ip || r.masterPort !== REDIS_PORT)
      note('ReplicaNotFollowing', `${i.pod} does not follow the master`);
    else if (r.syncInProgress || !r.linkUp)
      note('ReplicaNotSynced', `${i.pod} ${r.syncInProgress ? 'is syncing' : 'has its link down'}`);
  }
  const missing = desired - instances.filter((i) => i.ordinal < desired).length;
  if (missing > 0) note('InstanceMissing', `${missing} instance(s) have no pod yet`);
  return {
    healthy:
      problems.length === 0
        ? {
            type: 'Healthy',
            status: 'True',
            reason,
            message: `master ${m?.pod} serves; ${desired - 1} replica(s) in sync`,
          }
        : { type: 'Healthy', status: 'False', reason, message: problems.join('; ') },
    masterUnreachableSince: undefined,
    ...(m?.replication?.role === 'master'
      ? { history: { id: m.replication.replid, offset: m.replication.offset } }
      : {}),
  };
};
