import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { installTideway } from '../infra/install.ts';
import { writeFunctionKubeconfig } from '../infra/rbac/credentials.ts';
import type { Testbed } from '../infra/testbed/types.ts';
import { until } from '../infra/testbed/wait.ts';
import type { EtcdCluster } from '../shared/api/generated.ts';
import { podFor, servicesFor } from '../shared/etcdcluster/desired.ts';
import { selectorLabels } from '../shared/etcdcluster/names.ts';
import { TIDEWAY_KINDS } from '../shared/kube/resources.ts';
import { benchNamespaces, now, percentile, SERVERLESS, spawnFunction } from './support.ts';

const ETCD = TIDEWAY_KINDS.EtcdCluster;
const seconds = (v: number) => `${(v / 1000).toFixed(2)} s`;
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export type EtcdBenchOptions = { rounds: number };

/**
 * EtcdClusters with the product's functions (watcher, two etcd-reconcile replicas): apply → Ready
 * for `size: 3` against the same three members as a bare StatefulSet (the same pod spec, all
 * started at once: the platform's floor — scheduling, volumes, DNS, etcd's own election), and the
 * time to scale 3 → 5 (one learner at a time, each promoted once caught up).
 */
export const benchEtcd = async (bed: Testbed, o: EtcdBenchOptions) => {
  await installTideway({ kubectl: bed.kubectl, kubeconfig: bed.kubeconfig, fieldManager: 'tideway-bench' });
  const kc = new KubeConfig();
  kc.loadFromFile(bed.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const lines: string[] = [];
  const { create: namespace, drop } = benchNamespaces(core);

  // --- the floor: the same members as a bare StatefulSet ---------------------------------------
  const bare = async () => {
    const ns = await namespace('bench-etcd-bare');
    const c = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'EtcdCluster',
      metadata: { name: 'b', namespace: ns, uid: 'bare' },
      spec: { size: 3, version: '3.6' },
    } as EtcdCluster;
    const members = ['b-etcd-0', 'b-etcd-1', 'b-etcd-2'];
    // Tideway's own pod spec, with the names a StatefulSet gives (hostname = pod, subdomain = Service).
    const template = podFor(c, '$(POD_NAME)', { state: 'new', initialCluster: members });
    const container = template.spec?.containers[0];
    if (!container) throw new Error('no container');
    container.env = [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }];
    const started = now();
    for (const svc of servicesFor(c))
      await core.createNamespacedService({
        namespace: ns,
        body: { ...svc, metadata: { ...svc.metadata, ownerReferences: undefined } },
      });
    // The Services select the engine's labels: the pods carry them (no watcher looks at this namespace).
    const labels = { app: 'bare-etcd', ...selectorLabels('b') };
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'b-etcd' },
        spec: {
          serviceName: 'b-etcd-peers',
          replicas: 3,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [container] },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      },
    });
    await until(
      'bare etcd Ready',
      async () => {
        const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=bare-etcd' });
        return pods.items.length === 3 && pods.items.every(isReady) ? true : undefined;
      },
      600_000,
      250,
    );
    const t = now() - started;
    await drop(ns);
    return t;
  };

  // --- Tideway ----------------------------------------------------------------------------------
  const ns = await namespace('bench-etcd');
  const env = { NATS_URL: bed.natsUrl, TIDEWAY_WATCH_NAMESPACE: ns, TIDEWAY_LEASE_DURATION: '5s' };
  const kubeconfig = (fn: string) =>
    writeFunctionKubeconfig({ admin: kc, fn, dir: join(bed.dir, 'bench-kube') });
  const functions = [
    spawnFunction(
      'watcher',
      { ...env, TIDEWAY_WATCHER_ID: 'bench-etcd', KUBECONFIG: await kubeconfig('watcher') },
      SERVERLESS,
    ),
  ];
  for (let r = 0; r < 2; r++)
    functions.push(
      spawnFunction(
        'etcd-reconcile',
        { ...env, KUBECONFIG: await kubeconfig('etcd-reconcile'), TIDEWAY_REPLICA: String(r) },
        SERVERLESS,
      ),
    );
  const ready = (name: string, size: number) =>
    until(
      `${name} Ready at ${size}`,
      async () => {
        const c = (await custom.getNamespacedCustomObject({ ...ETCD, namespace: ns, name })) as EtcdCluster;
        const cond = (c.status?.conditions as { type: string; status: string }[] | undefined)?.find(
          (x) => x.type === 'Ready',
        );
        return c.status?.observedGeneration === c.metadata.generation &&
          cond?.status === 'True' &&
          c.status?.size === size
          ? c
          : undefined;
      },
      600_000,
      250,
    );
  try {
    const floor: number[] = [];
    const applied: number[] = [];
    const scaled: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      floor.push(await bare());
      const name = `e${round}`;
      const t0 = now();
      await custom.createNamespacedCustomObject({
        ...ETCD,
        namespace: ns,
        body: {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'EtcdCluster',
          metadata: { name },
          spec: { size: 3 },
        },
      });
      await ready(name, 3);
      applied.push(now() - t0);
      const t1 = now();
      await custom.patchNamespacedCustomObject(
        { ...ETCD, namespace: ns, name, body: { spec: { size: 5 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await ready(name, 5);
      scaled.push(now() - t1);
      await custom.deleteNamespacedCustomObject({ ...ETCD, namespace: ns, name });
      process.stderr.write(
        `[bench] etcd round ${round + 1}: bare ${seconds(floor.at(-1) ?? 0)}, apply → Ready ${seconds(applied.at(-1) ?? 0)}, 3 → 5 ${seconds(scaled.at(-1) ?? 0)}\n`,
      );
    }
    const sort = (a: number[]) => [...a].sort((x, y) => x - y);
    const f = percentile(sort(floor), 50);
    const a = percentile(sort(applied), 50);
    lines.push(
      `etcd apply → Ready (size 3), median of ${o.rounds}: ${seconds(a)}; the same members as a bare StatefulSet: ${seconds(f)}; ratio ${(a / f).toFixed(2)}x`,
      `etcd scale 3 → 5 (two learners, one at a time, each promoted once caught up), median of ${o.rounds}: ${seconds(percentile(sort(scaled), 50))}`,
    );
    process.stderr.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(functions.map((f) => f.stop()));
    await drop(ns).catch(() => undefined);
  }
  return lines;
};
