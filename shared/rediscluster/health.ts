import { parseDuration } from '../api/duration.ts';
import type { RedisCluster } from '../api/generated.ts';
import type { ConditionInput } from '../kube/conditions.ts';
import { REDIS_PORT } from './names.ts';
import type { Instance } from './probe.ts';

export type Assessment = {
  healthy: ConditionInput;
  /** When the master was first found unreachable (kept across runs); undefined when it serves. */
  masterUnreachableSince: string | undefined;
  /** Promote `to` now: the master has been unreachable for failover.after. */
  failover?: { from: string; to: string; reason: 'MasterUnreachable' };
  /** Look again this soon: the failover clock is running. */
  recheckMs?: number;
};

const answers = (i: Instance | undefined) => i?.replication !== undefined && !i.terminating;

/**
 * The replica to promote: it answers, it is a replica that is not in the middle of a full sync
 * (its data set would be partial), and it has the highest replication offset (the most writes);
 * the lowest ordinal breaks a tie so that two assessors agree.
 */
export const bestReplica = (instances: readonly Instance[], exclude: string | undefined) =>
  instances
    .filter(
      (i) =>
        i.pod !== exclude &&
        answers(i) &&
        i.replication?.role === 'replica' &&
        !i.replication.syncInProgress &&
        i.ip !== undefined,
    )
    .sort((a, b) => (b.replication?.offset ?? 0) - (a.replication?.offset ?? 0) || a.ordinal - b.ordinal)[0];

/**
 * Health of a cluster from one probe of every instance, and whether the failover clock ran out.
 * The master is unreachable when its server does not answer (pod gone, process down, network);
 * a master that answers as a fenced replica after a restart is reconcile's to put back, not a
 * reason to fail over.
 */
export const assessHealth = (rc: RedisCluster, instances: readonly Instance[], now: Date): Assessment => {
  const masterName = rc.status?.master;
  const desired = rc.spec.replicas ?? 3;
  const m = instances.find((i) => i.pod === masterName);
  const since = rc.status?.failover?.masterUnreachableSince;

  if (!answers(m)) {
    const start = since ?? now.toISOString();
    const afterMs = parseDuration(rc.spec.failover?.after ?? '5s');
    const downMs = now.getTime() - Date.parse(start);
    const enabled = rc.spec.failover?.enabled ?? true;
    const candidate = bestReplica(instances, masterName);
    const healthy = (reason: string, message: string): ConditionInput => ({
      type: 'Healthy',
      status: 'False',
      reason,
      message,
    });
    const down = `master ${masterName} unreachable for ${(downMs / 1000).toFixed(1)}s${m?.error ? ` (${m.error})` : ''}`;
    if (!enabled)
      return {
        healthy: healthy(
          'MasterUnreachable',
          `${down}; automatic failover is disabled (spec.failover.enabled)`,
        ),
        masterUnreachableSince: start,
      };
    if (!candidate)
      return {
        healthy: healthy('MasterUnreachable', `${down}; no replica answers that could take over`),
        masterUnreachableSince: start,
      };
    if (downMs >= afterMs && masterName)
      return {
        healthy: healthy('FailingOver', `${down}; promoting ${candidate.pod}`),
        masterUnreachableSince: start,
        failover: { from: masterName, to: candidate.pod, reason: 'MasterUnreachable' },
      };
    return {
      healthy: healthy(
        'MasterUnreachable',
        `${down}; ${candidate.pod} takes over after ${rc.spec.failover?.after ?? '5s'}`,
      ),
      masterUnreachableSince: start,
      recheckMs: Math.max(100, Math.min(1000, afterMs - downMs)),
    };
  }

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
  };
};
