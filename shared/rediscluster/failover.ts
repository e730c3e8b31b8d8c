import type { KubeConfig } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import type { EventPublisher } from '../bus/types.ts';
import { eventId } from '../events/event-id.ts';
import { EventType } from '../events/types.ts';
import { isNotFound } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/events.ts';
import { parseReplication } from '../redis/info.ts';
import { failpoint } from '../runtime/failpoints.ts';
import { TemporaryError } from '../runtime/handler.ts';
import type { Logger } from '../runtime/logger.ts';
import { labelPod } from './kube.ts';
import type { LoadedCluster } from './load.ts';
import { REDIS_PORT } from './names.ts';
import { type Instance, onInstance } from './probe.ts';
import { recordHistory } from './promotion.ts';

export type FailoverDecision = { from: string; to: string; reason: string };

export type FailoverResult =
  | { done: true; at: string }
  /** Someone else changed the record first (another failover, a switchover): nothing was done. */
  | { done: false; master: string | undefined };

/**
 * Promotes `to` in place of a lost master. First the old master loses its role label (the master
 * Service stops sending it clients; a failure stops the promotion). Then the record
 * (status.master) changes, by compare-and-set on the master the decision was made against: two
 * health replicas, or health and reconcile, can never promote two different replicas. Then the
 * servers: the new master stops replicating and gets the label, the others follow it. Every step
 * first checks that this run still holds the cluster's lock, so a run that stalled past its lease
 * acts on nothing. The old master is fenced on restart (it starts as a replica of nothing) and
 * reconcile points it at the new master; one that was only partitioned away loses its replicas
 * here and, with min-replicas-to-write, stops accepting writes min-replicas-max-lag seconds later.
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
  /** Throws unless this run still holds the cluster's lock (HandlerContext.fence). */
  fence: () => void;
}): Promise<FailoverResult> => {
  const { decision: d, cluster, now } = o;
  const at = now.toISOString();
  const { namespace } = cluster.key;
  const target = o.instances.find((i) => i.pod === d.to);
  const ip = target?.ip;
  if (!ip) throw new TemporaryError('NoAddress', `${d.to} has no IP`);

  // Fence the old master first, as far as Kubernetes can: off the master Service, so no new
  // client connection reaches it. If that fails, nothing has changed yet: stop here, and never
  // let two pods be behind the master Service.
  failpoint('failover.before-unlabel');
  // Every pod labelled master, not only the recorded one: nothing else may stay behind the
  // master Service once another is promoted.
  const labelled = o.instances.filter((i) => i.labelledRole === 'master').map((i) => i.pod);
  for (const pod of new Set([d.from, ...labelled])) {
    o.fence();
    try {
      await labelPod(o.kube, namespace, pod, null);
    } catch (error) {
      if (!isNotFound(error))
        throw new TemporaryError(
          'FencingFailed',
          `could not take ${pod} off the master Service; not promoting`,
          1000,
          {
            cause: error,
          },
        );
    }
  }

  // The record next, by compare-and-set on the master the decision was made against.
  failpoint('failover.before-record');
  const written = await cluster.writeStatus((s) => {
    o.fence();
    return s.master !== d.from
      ? undefined
      : {
          ...s,
          master: d.to,
          failover: {
            count: (s.failover?.count ?? 0) + 1,
            last: { from: d.from, to: d.to, at, reason: d.reason },
          },
        };
  });
  if (written?.status?.master !== d.to || written.status.failover?.last?.at !== at)
    return { done: false, master: written?.status?.master };

  failpoint('failover.before-promote');
  o.fence();
  const promoted = await onInstance(ip, o.password, async (r) => {
    await r.command('REPLICAOF', 'NO', 'ONE');
    return parseReplication(String(await r.command('INFO', 'replication')));
  });
  // The new history at once: if this master is lost too before health records it, its replicas
  // (which continue it) are the candidates.
  if (promoted.role === 'master')
    await cluster.writeStatus((s) => {
      o.fence();
      return s.master !== d.to ? undefined : { ...s, replication: recordHistory(s.replication, promoted) };
    });
  o.fence();
  await labelPod(o.kube, namespace, d.to, 'master');
  // The other replicas follow the new master (partial resync: same replication history). One that
  // does not answer now is put in its place by reconcile when it does. A replica that holds more
  // than the new master is left alone: following it would wipe data.
  const promotedOffset = target.replication?.offset ?? 0;
  await Promise.all(
    o.instances
      .filter((i) => i.pod !== d.to && i.pod !== d.from && i.ip && i.replication && !i.terminating)
      .filter((i) => (i.replication?.offset ?? 0) <= promotedOffset)
      .map(async (i) => {
        try {
          o.fence();
          await onInstance(i.ip as string, o.password, (r) => r.command('REPLICAOF', ip, String(REDIS_PORT)));
          o.fence();
          await labelPod(o.kube, namespace, i.pod, 'replica');
        } catch (error) {
          o.log.warn('replica not repointed; reconcile will', { pod: i.pod, error });
        }
      }),
  );

  const note = `master ${d.from} ${d.reason === 'MasterBehind' ? 'came back with less data than a replica' : 'unreachable'}; promoted ${d.to} (the most advanced replica of the cluster's replication history)`;
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
