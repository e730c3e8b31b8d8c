import type { KubeConfig } from '@kubernetes/client-node';
import type { EventRecorder } from '../kube/events.ts';
import { parseReplication } from '../redis/info.ts';
import { failpoint } from '../runtime/failpoints.ts';
import { TemporaryError } from '../runtime/handler.ts';
import type { Logger } from '../runtime/logger.ts';
import { labelPod } from './kube.ts';
import type { LoadedCluster } from './load.ts';
import { REDIS_PORT } from './names.ts';
import { type Instance, onInstance } from './probe.ts';
import { mostAdvancedFirst } from './promotion.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The replica a planned switchover hands over to: in sync, in range, most advanced. */
export const switchoverTarget = (
  instances: readonly Instance[],
  master: Instance,
  eligible: (i: Instance) => boolean,
) =>
  instances
    .filter((i) => {
      const r = i.replication;
      return (
        i !== master &&
        !i.terminating &&
        i.podReady &&
        eligible(i) &&
        r?.role === 'replica' &&
        r.linkUp &&
        !r.syncInProgress &&
        r.masterHost === master.ip &&
        r.masterPort === REDIS_PORT
      );
    })
    .sort(mostAdvancedFirst)[0];

/**
 * A planned change of master with no acknowledged write lost: the server's own FAILOVER command
 * pauses writes on the master, waits until the target has every byte, then swaps the roles
 * (Redis ≥ 6.2, Valkey). Only after the servers agree does the record (status.master) follow,
 * by compare-and-set; then labels (the old master's first) and the other replicas. If FAILOVER
 * gives up (the target did not catch up in time), the master resumes and nothing changed.
 */
export const switchover = async (o: {
  kube: KubeConfig;
  cluster: LoadedCluster;
  instances: readonly Instance[];
  password: string;
  from: Instance;
  to: Instance;
  why: string;
  log: Logger;
  recorder: EventRecorder;
  timeoutMs?: number;
  /** Throws unless this run still holds the cluster's lock (HandlerContext.fence). */
  fence: () => void;
}): Promise<void> => {
  const { from, to } = o;
  const timeoutMs = o.timeoutMs ?? 5000;
  if (!from.ip || !to.ip) throw new TemporaryError('NoAddress', 'switchover needs both pods to have an IP');
  const toIp = to.ip;
  o.fence();
  await onInstance(from.ip, o.password, (r) => {
    // Again once connected: a run that stalled while connecting must not send it.
    o.fence();
    return r.command('FAILOVER', 'TO', toIp, String(REDIS_PORT), 'TIMEOUT', String(timeoutMs));
  });
  // FAILOVER runs in the background: wait for the roles to swap, or for it to give up.
  const deadline = Date.now() + timeoutMs + 3000;
  for (;;) {
    const [a = '', b = ''] = await Promise.all(
      [from, to].map((i) =>
        onInstance(i.ip as string, o.password, async (r) =>
          String(await r.command('INFO', 'replication')),
        ).catch(() => ''),
      ),
    );
    const ra = a ? parseReplication(a) : undefined;
    const rb = b ? parseReplication(b) : undefined;
    if (rb?.role === 'master' && ra?.role === 'replica' && ra.masterHost === toIp) break;
    // Back to no-failover while still master: it gave up (the target did not catch up in time).
    const abandoned = ra?.role === 'master' && a.includes('master_failover_state:no-failover');
    if (abandoned || Date.now() > deadline)
      throw new TemporaryError(
        'SwitchoverTimedOut',
        `${to.pod} did not take over from ${from.pod} within ${timeoutMs} ms; ${from.pod} stays master`,
        2000,
      );
    await sleep(100);
  }

  failpoint('switchover.after-swap');
  const written = await o.cluster.writeStatus((s) => {
    o.fence();
    return s.master !== from.pod ? undefined : { ...s, master: to.pod };
  });
  if (written?.status?.master !== to.pod)
    throw new TemporaryError(
      'MasterChanged',
      `status.master changed during the switchover to ${to.pod}`,
      500,
    );
  const { namespace } = o.cluster.key;
  o.fence();
  await labelPod(o.kube, namespace, from.pod, 'replica');
  o.fence();
  await labelPod(o.kube, namespace, to.pod, 'master');
  await Promise.all(
    o.instances
      .filter((i) => i !== from && i !== to && i.ip && i.replication && !i.terminating)
      .map((i) =>
        onInstance(i.ip as string, o.password, (r) => {
          o.fence();
          return r.command('REPLICAOF', toIp, String(REDIS_PORT));
        }).catch((error: unknown) =>
          o.log.warn('replica not repointed; reconcile will', { pod: i.pod, error }),
        ),
      ),
  );
  o.log.info('switchover', { from: from.pod, to: to.pod, why: o.why });
  await o.recorder.record({
    regarding: o.cluster.regarding,
    type: 'Normal',
    reason: 'Switchover',
    action: 'Switchover',
    note: `master ${from.pod} → ${to.pod}: ${o.why}`,
  });
};
