import {
  CoreV1Api,
  DiscoveryV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
  type V1EndpointSlice,
  type V1Namespace,
  type V1Service,
} from '@kubernetes/client-node';
import { sleep } from '../wait.ts';
import { ClusterDnsStartError } from './errors.ts';
import { type ClusterView, viewOf } from './view.ts';

export type ClusterWatch = {
  /** The objects as last seen; rebuilt after a change, at the next question. */
  view(): ClusterView;
  stop(): Promise<void>;
};

const RESTART_MS = 1000;

/**
 * Lists and watches Namespaces, Services and EndpointSlices (what CoreDNS's kubernetes plugin
 * watches with `pods insecure`). A watch that fails starts again from a fresh list after a
 * second, for as long as the test bed runs (the API server may be stopped by a fault test).
 * Resolves once every kind was listed, or throws after `syncTimeoutMs`.
 */
export const watchCluster = async (
  kc: KubeConfig,
  o: { syncTimeoutMs: number; log: (m: string) => void },
): Promise<ClusterWatch> => {
  const core = kc.makeApiClient(CoreV1Api);
  const discovery = kc.makeApiClient(DiscoveryV1Api);
  let stopped = false;
  let dirty = true;
  const listed = new Set<string>();

  const watch = <T extends KubernetesObject>(path: string, list: () => Promise<KubernetesListObject<T>>) => {
    const informer = makeInformer<T>(kc, path, async () => {
      const result = await list();
      listed.add(path);
      return result;
    });
    const changed = () => {
      dirty = true;
    };
    informer.on('add', changed);
    informer.on('update', changed);
    informer.on('delete', changed);
    let restarting = false;
    informer.on('error', (error: unknown) => {
      if (stopped || restarting) return;
      restarting = true;
      o.log(`cluster DNS: watch ${path} failed (${String(error)}); again in ${RESTART_MS} ms`);
      void sleep(RESTART_MS).then(() => {
        restarting = false;
        if (!stopped) void informer.start().catch(() => undefined);
      });
    });
    return informer;
  };

  const namespaces = watch<V1Namespace>('/api/v1/namespaces', () => core.listNamespace());
  const services = watch<V1Service>('/api/v1/services', () => core.listServiceForAllNamespaces());
  const slices = watch<V1EndpointSlice>('/apis/discovery.k8s.io/v1/endpointslices', () =>
    discovery.listEndpointSliceForAllNamespaces(),
  );
  const informers = [namespaces, services, slices];
  const stop = async () => {
    stopped = true;
    await Promise.all(informers.map((i) => i.stop()));
  };

  await Promise.all(informers.map((i) => i.start().catch(() => undefined)));
  const deadline = Date.now() + o.syncTimeoutMs;
  while (listed.size < informers.length) {
    if (Date.now() > deadline) {
      await stop();
      throw new ClusterDnsStartError(
        `cluster DNS: the API server did not list namespaces, services and endpointslices within ${o.syncTimeoutMs} ms`,
        true,
      );
    }
    await sleep(100);
  }

  let current: ClusterView | undefined;
  return {
    view: () => {
      if (dirty || !current) {
        dirty = false;
        current = viewOf({
          synced: true,
          namespaces: namespaces.list().flatMap((n) => n.metadata?.name ?? []),
          services: services.list(),
          endpointSlices: slices.list(),
        });
      }
      return current;
    },
    stop,
  };
};
