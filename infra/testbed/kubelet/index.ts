import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { NodeAgent, NodeAgentOptions } from '../node-agent/types.ts';
import { startNodeHeartbeat } from './node.ts';
import { type PodWorker, startPodWorker } from './pod-worker.ts';

/**
 * The least time between SIGTERM and SIGKILL, as kubelet's minimumGracePeriodInSeconds: even a
 * force delete (grace 0) gives a container 2 s to act on SIGTERM, which Redis does (it saves and
 * waits for replicas). A lost node (holdDown) is the one stop with no grace at all.
 */
const MIN_GRACE_MS = 2000;

/**
 * The test bed's kubelet: registers the node, and every 300 ms lists the pods bound to it and
 * reconciles them with their local processes (level-triggered, like kubelet's sync loop).
 */
export const startNodeAgent = async (
  o: NodeAgentOptions & { restartBackoffMs?: number; maxBackoffMs?: number },
): Promise<NodeAgent> => {
  const kc = new KubeConfig();
  kc.loadFromFile(o.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const heartbeat = await startNodeHeartbeat(kc, {
    nodeName: o.nodeName,
    hostIp: o.network.hostIp,
    podCidr: o.network.podCidr,
  });
  const ctx = {
    core,
    network: o.network,
    images: o.images,
    imageStore: o.imageStore,
    workDir: o.workDir,
    testbedId: o.testbedId,
    hostIp: o.network.hostIp,
    restartBackoffMs: o.restartBackoffMs ?? 10_000,
    maxBackoffMs: o.maxBackoffMs ?? 300_000,
    volumeRefreshMs: o.volumeRefreshMs ?? 2000,
    clusterDns: o.clusterDns,
  };
  const workers = new Map<string, { worker: PodWorker; pod: V1Pod; terminating?: Promise<void> }>();
  const byName = (ns: string, name: string) =>
    [...workers.values()].find((w) => w.pod.metadata?.namespace === ns && w.pod.metadata?.name === name);

  const terminate = (uid: string, graceMs: number, finalize: boolean) => {
    const w = workers.get(uid);
    if (!w) return;
    w.terminating ??= w.worker.terminate(graceMs, finalize).finally(() => workers.delete(uid));
  };

  let stopped = false;
  const sync = async () => {
    const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${o.nodeName}` });
    const seen = new Set<string>();
    for (const pod of list.items) {
      const uid = pod.metadata?.uid ?? '';
      seen.add(uid);
      const existing = workers.get(uid);
      if (pod.metadata?.deletionTimestamp) {
        if (existing)
          terminate(
            uid,
            Math.max(MIN_GRACE_MS, (pod.metadata.deletionGracePeriodSeconds ?? 30) * 1000),
            true,
          );
        else
          await core
            .deleteNamespacedPod({
              namespace: pod.metadata.namespace ?? '',
              name: pod.metadata.name ?? '',
              gracePeriodSeconds: 0,
              body: { gracePeriodSeconds: 0, preconditions: { uid } },
            })
            .catch(() => undefined);
        continue;
      }
      if (existing) {
        existing.pod = pod;
        existing.worker.update(pod);
      } else {
        workers.set(uid, { worker: startPodWorker(ctx, pod), pod });
      }
    }
    // Gone from the API without passing through deletion (force delete): stopped with the least
    // grace a kubelet gives.
    for (const uid of workers.keys()) if (!seen.has(uid)) terminate(uid, MIN_GRACE_MS, false);
  };

  let loop: NodeJS.Timeout | undefined;
  const tick = async () => {
    if (stopped) return;
    await sync().catch(() => undefined);
    if (!stopped) loop = setTimeout(tick, 300);
  };
  await tick();

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(loop);
    heartbeat.stop();
    for (const uid of [...workers.keys()]) terminate(uid, 5000, false);
    await Promise.all([...workers.values()].map((w) => w.terminating));
  };
  return {
    nodeName: o.nodeName,
    holdDown: async (ns, name) => {
      const w = byName(ns, name);
      if (!w) throw new Error(`no pod ${ns}/${name} on node ${o.nodeName}`);
      await w.worker.hold(true);
    },
    release: async (ns, name) => {
      const w = byName(ns, name);
      if (!w) throw new Error(`no pod ${ns}/${name} on node ${o.nodeName}`);
      await w.worker.hold(false);
    },
    containerPids: (ns, name) => byName(ns, name)?.worker.pids() ?? new Map(),
    stop,
    [Symbol.asyncDispose]: stop,
  };
};
