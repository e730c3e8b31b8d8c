import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { installChartOnTestbed } from '../infra/helm/local/install.ts';
import type { Testbed } from '../infra/testbed/types.ts';
import { until } from '../infra/testbed/wait.ts';
import type { RedisCluster } from '../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../shared/kube/resources.ts';
import { loadServerless } from '../shared/runtime/config.ts';
import { now, root, SERVERLESS } from './support.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
const seconds = (v: number) => `${(v / 1000).toFixed(2)} s`;
const median = (v: readonly number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? Number.NaN;

/**
 * Tideway from its chart (issue 14's benchmark): helm install → every function available → the
 * first RedisCluster Ready, against the floor of one pod of the same image going Ready; then an
 * event function's cold start from zero (KEDA) against the same event handled warm. "Handled" is
 * seen from outside: the StatefulSet reconcile creates for a new cluster.
 */
export const benchChart = async (bed: Testbed, o: { rounds: number }) => {
  const kc = new KubeConfig();
  kc.loadFromFile(bed.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ns = `bench-chart-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const fns = Object.keys((await loadServerless(SERVERLESS)).functions);
  const log = (m: string) => process.stderr.write(`${m}\n`);

  const t0 = now();
  const chart = await installChartOnTestbed({
    info: bed,
    root,
    release: 'tideway',
    namespace: ns,
    watchNamespaces: [ns],
    keda: { pollingInterval: 1, cooldownPeriod: 20, initialCooldownPeriod: 5 },
    values: Object.fromEntries(fns.map((fn) => [`functions.${fn}.replicas`, '1'])),
    log,
  });
  try {
    const installed = now() - t0;
    const apply = (name: string) =>
      custom.createNamespacedCustomObject({
        ...RDC,
        namespace: ns,
        body: {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'RedisCluster',
          metadata: { name },
          spec: { replicas: 1 },
        },
      });
    const readyOf = (name: string) =>
      until(
        `${name} Ready`,
        async () => {
          const rc = (await custom.getNamespacedCustomObject({
            ...RDC,
            namespace: ns,
            name,
          })) as RedisCluster;
          return rc.status?.phase === 'Ready' ? true : undefined;
        },
        300_000,
        100,
      );
    await apply('first');
    await until(
      'first Ready',
      async () => {
        const rc = (await custom.getNamespacedCustomObject({
          ...RDC,
          namespace: ns,
          name: 'first',
        })) as RedisCluster;
        return rc.status?.phase === 'Ready' ? true : undefined;
      },
      300_000,
      100,
    );
    const firstReady = now() - t0;

    // The floor: one pod of the same image, as the chart's pods run it, going Ready.
    const floorStart = now();
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'floor' },
        spec: {
          selector: { matchLabels: { app: 'floor' } },
          template: {
            metadata: { labels: { app: 'floor' } },
            spec: {
              containers: [
                { name: 'c', image: chart.image, command: ['node', '-e', 'setInterval(() => {}, 1e6)'] },
              ],
            },
          },
        },
      },
    });
    await until(
      'floor available',
      async () =>
        ((await apps.readNamespacedDeployment({ namespace: ns, name: 'floor' })).status?.availableReplicas ??
          0) === 1
          ? true
          : undefined,
      120_000,
      100,
    );
    const floor = now() - floorStart;

    const reconcilePods = async () =>
      (
        await core.listNamespacedPod({
          namespace: ns,
          labelSelector: 'app.kubernetes.io/instance=tideway,app.kubernetes.io/component=reconcile',
        })
      ).items.length;
    /** apply → the cluster's StatefulSet exists (reconcile handled the event). */
    const handled = async (name: string) => {
      const start = now();
      await apply(name);
      await until(
        `${name}'s StatefulSet`,
        () =>
          apps.readNamespacedStatefulSet({ namespace: ns, name }).then(
            () => true,
            () => undefined,
          ),
        120_000,
        50,
      );
      return now() - start;
    };
    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      // Cold: no reconcile pod at all (KEDA took it to zero and it is gone).
      await until(
        'no reconcile pod',
        async () => ((await reconcilePods()) === 0 ? true : undefined),
        180_000,
        200,
      );
      cold.push(await handled(`cold-${i}`));
      await readyOf(`cold-${i}`);
      // Warm: the same event with the pod up and idle (within KEDA's cooldown).
      warm.push(await handled(`warm-${i}`));
      await readyOf(`warm-${i}`);
    }
    const lines = [
      `chart: helm install → every function available ${seconds(installed)}; → first RedisCluster Ready ${seconds(firstReady)}`,
      `chart: one pod of the image → Ready (floor) ${seconds(floor)}; install → first Ready / floor ${(firstReady / floor).toFixed(1)}x`,
      `chart: reconcile from zero (KEDA, polling 1 s, no pod) → event handled, median of ${o.rounds}: ${seconds(median(cold))}; warm ${seconds(median(warm))} (ratio ${(median(cold) / median(warm)).toFixed(1)}x)`,
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
    return lines;
  } finally {
    await chart.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
};
