import { setTimeout as sleep } from 'node:timers/promises';
import type { Instance } from '../../shared/rediscluster/probe.ts';

export type ReplicaSync = {
  /** Follow the master with its data: link up, no sync running, its replication id. */
  synced: string[];
  /** Follow it but are not there yet, or do not answer: waited for. */
  waiting: { pod: string; why: string }[];
  /** Follow something else (a new cluster's fenced replicas): reconcile points them at the master later. */
  elsewhere: { pod: string; why: string }[];
};

/**
 * Where each replica stands after the master's data was replaced. A replica that followed the
 * master during the load resyncs by itself (the master, replicating from the feed, made it
 * resync; the promotion then continues its stream under the master's new id).
 */
export const replicaSync = (instances: readonly Instance[], master: Instance): ReplicaSync => {
  const out: ReplicaSync = { synced: [], waiting: [], elsewhere: [] };
  const m = master.replication;
  for (const i of instances) {
    if (i.pod === master.pod || i.terminating) continue;
    const r = i.replication;
    if (!r) out.waiting.push({ pod: i.pod, why: i.error ?? 'not answering' });
    else if (r.role === 'master') out.elsewhere.push({ pod: i.pod, why: 'answers as a master' });
    else if (r.masterHost !== master.ip)
      out.elsewhere.push({ pod: i.pod, why: `follows ${r.masterHost || 'nothing'}` });
    else if (r.linkUp && !r.syncInProgress && m?.role === 'master' && r.replid === m.replid)
      out.synced.push(i.pod);
    else
      out.waiting.push({
        pod: i.pod,
        why: r.syncInProgress ? 'syncing' : r.linkUp ? 'catching up' : 'link to the master down',
      });
  }
  return out;
};

/** In words, for a condition. */
export const describeSync = (s: ReplicaSync) =>
  [
    `${s.synced.length} replica${s.synced.length === 1 ? '' : 's'} in sync${s.synced.length ? ` (${s.synced.join(', ')})` : ''}`,
    ...(s.waiting.length ? [`not yet: ${s.waiting.map((w) => `${w.pod} (${w.why})`).join(', ')}`] : []),
    ...(s.elsewhere.length
      ? [`not following the master: ${s.elsewhere.map((w) => `${w.pod} (${w.why})`).join(', ')}`]
      : []),
  ].join('; ');

/** Waits, bounded, until no replica that follows the master is still syncing. */
export const waitForReplicas = async (o: {
  probe: () => Promise<{ instances: Instance[]; master: Instance | undefined }>;
  timeoutMs: number;
  signal?: AbortSignal;
}): Promise<ReplicaSync | undefined> => {
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    const { instances, master } = await o.probe();
    const s = master ? replicaSync(instances, master) : undefined;
    if ((s && s.waiting.length === 0) || Date.now() > deadline || o.signal?.aborted) return s;
    await sleep(500);
  }
};
