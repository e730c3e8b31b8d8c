import type { V1Pod } from '@kubernetes/client-node';
import { type RedisCluster, RedisClusterSpecDefaults, type RedisClusterStatus } from '../api/generated.ts';
import type { ConditionInput } from '../kube/conditions.ts';
import { bootstrapPending } from './bootstrap.ts';
import { REDIS_PORT } from './names.ts';
import type { Instance } from './probe.ts';

type Observed = Pick<
  RedisClusterStatus,
  'phase' | 'master' | 'replicas' | 'readyReplicas' | 'ready' | 'version' | 'nodes'
> & { conditions: ConditionInput[] };

/** Container states that will not get better by waiting: shown as a reason, not as Pending. */
const STUCK = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

export const stuckPods = (pods: readonly V1Pod[]) =>
  pods.flatMap((p) =>
    (p.status?.containerStatuses ?? [])
      .filter((c) => c.state?.waiting?.reason && STUCK.has(c.state.waiting.reason))
      .map((c) => ({
        pod: p.metadata?.name ?? '',
        reason: c.state?.waiting?.reason ?? '',
        message: c.state?.waiting?.message ?? '',
      })),
  );

/**
 * What the cluster is, from the servers themselves: an instance counts as ready when its pod is
 * Ready and it plays its part — the master is a master, a replica follows the master with its
 * link up. Ready means every desired instance does; Degraded that the master serves but not all.
 */
export const observe = (
  rc: RedisCluster,
  instances: readonly Instance[],
  master: string | undefined,
  pods: readonly V1Pod[],
): Observed => {
  const desired = rc.spec.replicas ?? RedisClusterSpecDefaults.replicas;
  const m = instances.find((i) => i.pod === master);
  const masterServes = m?.replication?.role === 'master' && m.podReady;
  const nodes = instances
    .filter((i) => i.ordinal < Math.max(desired, (m?.ordinal ?? 0) + 1))
    .map((i) => {
      const r = i.replication;
      const isMaster = i.pod === master;
      const follows =
        r?.role === 'replica' &&
        r.linkUp &&
        !r.syncInProgress &&
        r.masterHost === m?.ip &&
        r.masterPort === REDIS_PORT;
      const ready = i.podReady && (isMaster ? r?.role === 'master' : follows);
      return {
        pod: i.pod,
        role: isMaster ? ('master' as const) : ('replica' as const),
        ready,
        ...(r ? { replicationOffset: r.offset } : {}),
        ...(!isMaster && r && m?.replication
          ? { lagBytes: Math.max(0, m.replication.offset - r.offset) }
          : {}),
      };
    });
  // What the spec asks for: instances above it (the master among them while a scale-down hands
  // its role over) serve for now, and make no cluster of the spec's size Ready.
  const inSpec = new Set(instances.filter((i) => i.ordinal < desired).map((i) => i.pod));
  const readyReplicas = nodes.filter((n) => n.ready && inSpec.has(n.pod)).length;
  const masterAbove = m !== undefined && !inSpec.has(m.pod);
  const versions = [...new Set(instances.filter((i) => i.version).map((i) => i.version))];
  const stuck = stuckPods(pods);
  const phase: NonNullable<RedisClusterStatus['phase']> =
    masterServes && !masterAbove && readyReplicas >= desired
      ? 'Ready'
      : !rc.status?.master ||
          rc.status.phase === 'Creating' ||
          rc.status.phase === 'Pending' ||
          !rc.status.phase
        ? stuck.length > 0
          ? 'Failed'
          : 'Creating'
        : 'Degraded';
  // Created from a backup: not Ready, whatever the servers say, until its data is in.
  const pending = bootstrapPending(rc);
  const gated = pending ? (pending.failed ? 'Failed' : 'Creating') : phase;
  const conditions: ConditionInput[] = [
    pending
      ? { type: 'Ready', status: 'False', reason: pending.reason, message: pending.message }
      : phase === 'Ready'
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'AllInstancesReady',
            message: `${readyReplicas}/${desired} instances ready; master ${master}`,
          }
        : {
            type: 'Ready',
            status: 'False',
            reason: stuck[0]?.reason ?? (masterServes ? 'InstancesNotReady' : 'MasterNotReady'),
            message: stuck.length
              ? stuck.map((s) => `${s.pod}: ${s.reason}${s.message ? ` (${s.message})` : ''}`).join('; ')
              : `${readyReplicas}/${desired} instances ready${masterServes ? '' : `; master ${master ?? '(none yet)'} is not serving`}${masterAbove ? `; master ${master} is above the spec's ${desired} instances and hands its role over first` : ''}`,
          },
  ];
  return {
    phase: gated,
    ...(master ? { master } : {}),
    replicas: desired,
    readyReplicas,
    ready: `${readyReplicas}/${desired}`,
    ...(m?.version ? { version: versions.length > 1 ? versions.join(',') : m.version } : {}),
    nodes,
    conditions,
  };
};

/**
 * Every instance plays its part — each the spec asks for, and a master above them that a
 * scale-down hands its role over from — and no bootstrap waits for its data: when a disruptive
 * step (a restart, a switchover) may be taken. Not `Ready`, which a master above the spec's
 * instances withholds: a scale-down's switchover needs this first.
 */
export const allInSync = (rc: RedisCluster, o: Pick<Observed, 'nodes'>) => {
  const desired = rc.spec.replicas ?? RedisClusterSpecDefaults.replicas;
  return (
    !bootstrapPending(rc) && (o.nodes?.length ?? 0) >= desired && o.nodes?.every((n) => n.ready) === true
  );
};
