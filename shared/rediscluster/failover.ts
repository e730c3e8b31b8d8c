import type { KubeConfig } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import type { EventPublisher } from '../bus/types.ts';
import { eventId } from '../events/event-id.ts';
import { EventType } from '../events/types.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { Logger } from '../runtime/logger.ts';
import { labelPod } from './kube.ts';
import type { LoadedCluster } from './load.ts';
import { REDIS_PORT } from './names.ts';
import { type Instance, onInstance } from './probe.ts';

export type FailoverDecision = { from: string; to: string; reason: string };

export type FailoverResult =
  | { done: true; at: string }
  /** Someone else changed the record first (another failover, a switchover): nothing was done. */
  | { done: false; master: string | undefined };

/**
 * Promotes `to` in place of an unreachable master. The record (status.master) changes first, by
 * compare-and-set on the master the decision was made against: two health replicas, or health and
 * reconcile, can never promote two different replicas. Then the servers: the new master stops
 * replicating, the others follow it; the old master loses its label before the new one gets it,
 * so the Service never selects two. The old master is fenced on restart (it starts as a replica
 * of nothing) and reconcile points it at the new master: it never serves writes again.
 */
export const failOver = async (o: {
  kube: KubeConfig;
  cluster: LoadedCluster;
  instances: readonly Instance[];
  password: string;
  decision: FailoverDecision;
  now: Date;
  log: Logger;
  recorder: EventRecorder;
  publisher: EventPublisher;
  source: string;
}): Promise<FailoverResult> => {
  const { decision: d, cluster, now } = o;
  const at = now.toISOString();
  const written = await cluster.writeStatus((s) =>
    s.master !== d.from
      ? undefined
      : {
          ...s,
          master: d.to,
          failover: {
            count: (s.failover?.count ?? 0) + 1,
            last: { from: d.from, to: d.to, at, reason: d.reason },
          },
        },
  );
  if (written?.status?.master !== d.to || written.status.failover?.last?.at !== at)
    return { done: false, master: written?.status?.master };

  const target = o.instances.find((i) => i.pod === d.to);
  const ip = target?.ip;
  if (!ip) throw new Error(`${d.to} has no IP`); // bestReplica only picks instances with one
  await onInstance(ip, o.password, (r) => r.command('REPLICAOF', 'NO', 'ONE'));
  const { namespace } = cluster.key;
  if (o.instances.some((i) => i.pod === d.from))
    await labelPod(o.kube, namespace, d.from, null).catch((error: unknown) =>
      o.log.warn('could not unlabel the old master', { pod: d.from, error }),
    );
  await labelPod(o.kube, namespace, d.to, 'master');
  // The other replicas follow the new master (partial resync: same replication history). One that
  // does not answer now is put in its place by reconcile when it does.
  await Promise.all(
    o.instances
      .filter((i) => i.pod !== d.to && i.pod !== d.from && i.ip && i.replication && !i.terminating)
      .map(async (i) => {
        try {
          await onInstance(i.ip as string, o.password, (r) => r.command('REPLICAOF', ip, String(REDIS_PORT)));
          await labelPod(o.kube, namespace, i.pod, 'replica');
        } catch (error) {
          o.log.warn('replica not repointed; reconcile will', { pod: i.pod, error });
        }
      }),
  );

  const note = `master ${d.from} unreachable; promoted ${d.to} (highest replication offset)`;
  o.log.warn('failover', { from: d.from, to: d.to, reason: d.reason });
  await o.recorder.record({
    regarding: cluster.regarding,
    type: 'Warning',
    reason: 'Failover',
    action: 'Failover',
    note,
  });
  await o.publisher.publish(
    new CloudEvent({
      specversion: '1.0',
      id: eventId(cluster.regarding.uid, 'failover', d.from, d.to, at),
      source: o.source,
      type: EventType.clusterFailover,
      subject: `namespaces/${namespace}/redisclusters/${cluster.key.name}`,
      time: at,
      datacontenttype: 'application/json',
      kind: 'RedisCluster',
      namespace,
      name: cluster.key.name,
      data: { from: d.from, to: d.to, reason: d.reason, at },
    }),
  );
  return { done: true, at };
};
