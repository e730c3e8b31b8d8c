import type { KubeConfig } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import type { RedisClusterStatus } from '../api/generated.ts';
import type { EventPublisher } from '../bus/types.ts';
import { eventId } from '../events/event-id.ts';
import { EventType } from '../events/types.ts';
import { type Condition, setCondition } from '../kube/conditions.ts';
import { isNotFound } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { RedisClient } from '../redis/client.ts';
import { parseInfo, parseReplication, type Replication } from '../redis/info.ts';
import { failpoint } from '../runtime/failpoints.ts';
import { LockLostError, TemporaryError } from '../runtime/handler.ts';
import type { Logger } from '../runtime/logger.ts';
import { labelPod } from './kube.ts';
import type { LoadedCluster } from './load.ts';
import { REDIS_PORT, type Role } from './names.ts';
import { canFollow } from './plan.ts';
import { type Instance, onInstance } from './probe.ts';
import { changedSince, identityOf, recordHistory } from './promotion.ts';

export type FailoverDecision = { from: string; to: string; reason: string };

/** The API server's own message from a refused request (client-node keeps it in the body). */
const apiMessage = (error: unknown) => {
  const body = (error as { body?: unknown }).body;
  try {
    const parsed: unknown = typeof body === 'string' ? JSON.parse(body) : body;
    if (parsed && typeof parsed === 'object' && 'message' in parsed) return String(parsed.message);
  } catch {}
  return error instanceof Error ? error.message : String(error);
};

const identify = async (r: RedisClient) => identityOf(parseInfo(String(await r.command('INFO'))));

/** What a failover changes besides the record (pod labels, the servers' roles): a test fakes it. */
export type FailoverPorts = {
  /** Sets, or with null removes, one pod's role label. */
  labelPod: (namespace: string, pod: string, role: Role | null) => Promise<void>;
  /** Runs fn on one connection to the server at ip, closed after. */
  onInstance: <T>(ip: string, password: string, fn: (r: RedisClient) => Promise<T>) => Promise<T>;
};

export const failoverPorts = (kube: KubeConfig): FailoverPorts => ({
  labelPod: (namespace, pod, role) => labelPod(kube, namespace, pod, role),
  onInstance,
});

export type FailoverResult =
  | { done: true; at: string }
  /** Someone else changed the record first (another failover, a switchover): nothing was done. */
  | { done: false; master: string | undefined };

/**
 * Promotes `to` in place of a lost master. First the old master loses its role label (the master
 * Service stops sending it clients; a failure stops the promotion). Then the record
 * (status.master) changes, by compare-and-set on the master the decision was made against: two
 * health replicas, or health and reconcile, can never promote two different replicas. Then the
 * servers: the new master stops replicating and gets the label, the others follow it. The target
 * must still be the instance that was judged (the same process, history and offset, link down),
 * checked on the very connection that promotes it: one that restarted or moved meanwhile is not
 * promoted, the record goes back, and the next run judges again. Every step
 * first checks that this run still holds the cluster's lock, so a run that stalled past its lease
 * acts on nothing. The old master is fenced on restart (it starts as a replica of nothing) and
 * reconcile points it at the new master; one that was only partitioned away loses its replicas
 * here and, with min-replicas-to-write, stops accepting writes min-replicas-max-lag seconds later.
 */
export const failOver = async (o: {
  ports: FailoverPorts;
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
  const judged = target.replication;
  const changed = (why: string, more = '') =>
    new TemporaryError(
      'TargetChanged',
      `${d.to} ${why} since it was judged; not promoting it${more}, judging again`,
      200,
    );

  // The server process the judgement was about (the probe's run_id): a restart of the target
  // since the probe, or from here on, shows as another run_id.
  const seen = await o.ports.onInstance(ip, o.password, identify);
  const early = changedSince(judged, seen, target.runId);
  if (early) throw changed(early);

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
      await o.ports.labelPod(namespace, pod, null);
    } catch (error) {
      if (isNotFound(error)) continue;
      if (error instanceof LockLostError) throw error;
      const message = `could not take ${pod} off the master Service (${apiMessage(error)}); not promoting ${d.to} while ${pod} may still get clients`;
      // Said on the object, not only in a log: the cluster stays without a master because of it.
      await cluster
        .writeStatus((s) => {
          o.fence();
          return {
            ...s,
            conditions: setCondition(
              s.conditions as Condition[] | undefined,
              { type: 'Healthy', status: 'False', reason: 'FencingFailed', message },
              cluster.rc.metadata.generation,
            ),
          };
        })
        .catch((e: unknown) => {
          if (e instanceof LockLostError) throw e;
          o.log.warn('FencingFailed not recorded', { error: e });
        });
      throw new TemporaryError('FencingFailed', message, 1000, { cause: error });
    }
  }

  // The record next, by compare-and-set on the master the decision was made against.
  failpoint('failover.before-record');
  let before: RedisClusterStatus['failover'];
  const written = await cluster.writeStatus((s) => {
    o.fence();
    before = s.failover;
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
  /** The target was not promoted: the record goes back to what it was, if it is still ours. */
  const undo = async (why: string) => {
    await cluster.writeStatus((s) => {
      o.fence();
      if (s.master !== d.to || s.failover?.last?.at !== at) return undefined;
      const { failover: _ours, ...rest } = s;
      return { ...rest, master: d.from, ...(before ? { failover: before } : {}) };
    });
    return changed(why, `; status.master is back on ${d.from}`);
  };

  failpoint('failover.before-promote');
  o.fence();
  // Checked and promoted on one connection: a restart after the check closes it, so REPLICAOF
  // can only reach the process that was checked.
  let sent = false;
  let promoted: Replication;
  try {
    const outcome = await o.ports.onInstance(
      ip,
      o.password,
      async (r): Promise<{ why: string } | { promoted: Replication }> => {
        const why = changedSince(judged, await identify(r), seen.runId);
        if (why) return { why };
        o.fence();
        sent = true;
        await r.command('REPLICAOF', 'NO', 'ONE');
        return { promoted: parseReplication(String(await r.command('INFO', 'replication'))) };
      },
    );
    if ('why' in outcome) throw await undo(outcome.why);
    promoted = outcome.promoted;
  } catch (error) {
    // Unreachable before REPLICAOF was sent: nothing was promoted. After, it may have been.
    if (sent || error instanceof LockLostError || error instanceof TemporaryError) throw error;
    throw await undo(`does not answer (${error instanceof Error ? error.message : String(error)})`);
  }
  // The new history at once: if this master is lost too before health records it, its replicas
  // (which continue it) are the candidates.
  if (promoted.role === 'master')
    await cluster.writeStatus((s) => {
      o.fence();
      return s.master !== d.to ? undefined : { ...s, replication: recordHistory(s.replication, promoted) };
    });
  o.fence();
  await o.ports.labelPod(namespace, d.to, 'master');
  // The other replicas follow the new master (partial resync: same replication history). One that
  // does not answer now is put in its place by reconcile when it does. A replica that holds more
  // than the new master is left alone: following it would wipe data; so is one whose data is of
  // another history (an old volume), which reconcile never makes follow either (canFollow).
  const promotedOffset = target.replication?.offset ?? 0;
  await Promise.all(
    o.instances
      .filter((i) => i.pod !== d.to && i.pod !== d.from && i.ip && i.replication && !i.terminating)
      .filter((i) => (i.replication?.offset ?? 0) <= promotedOffset)
      .filter((i) => canFollow(i, target, cluster.rc.status?.replication))
      .map(async (i) => {
        try {
          o.fence();
          await o.ports.onInstance(i.ip as string, o.password, (r) => {
            // Again once connected: a run that stalled while connecting must not send it.
            o.fence();
            return r.command('REPLICAOF', ip, String(REDIS_PORT));
          });
          o.fence();
          await o.ports.labelPod(namespace, i.pod, 'replica');
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
