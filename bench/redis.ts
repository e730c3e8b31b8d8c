import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { installTideway } from '../infra/install.ts';
import { writeFunctionKubeconfig } from '../infra/rbac/credentials.ts';
import { freePort } from '../infra/testbed/process/ports.ts';
import type { Testbed } from '../infra/testbed/types.ts';
import { sleep, until } from '../infra/testbed/wait.ts';
import type { RedisCluster } from '../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../shared/kube/resources.ts';
import { connectRedis } from '../shared/redis/client.ts';
import {
  authConfSecretFor,
  configMapFor,
  renderedConfig,
  statefulSetFor,
} from '../shared/rediscluster/desired.ts';
import {
  benchNamespaces,
  metricsUntil,
  ms,
  now,
  percentile,
  pool,
  SERVERLESS,
  spawnFunction,
} from './support.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;

export type RedisBenchOptions = {
  /** Clusters applied at once in the second apply → Ready round. */
  clusters: number;
  /** Failover rounds. */
  rounds: number;
};

const seconds = (v: number) => `${(v / 1000).toFixed(2)} s`;
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * RedisClusters with the product's functions (watcher, two replicas each of reconcile and
 * health): apply → Ready for 1 and for N clusters at once, against the same pods as a bare
 * StatefulSet with no operator (the platform's floor: scheduling, volumes, process start); then
 * failover time, master held down → a write accepted through the master Service, against the
 * configured `failover.after` (the detection delay the user asked for).
 */
export const benchRedis = async (bed: Testbed, o: RedisBenchOptions) => {
  await installTideway({ kubectl: bed.kubectl, kubeconfig: bed.kubeconfig, fieldManager: 'tideway-bench' });
  const kc = new KubeConfig();
  kc.loadFromFile(bed.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const lines: string[] = [];
  const say = (...l: string[]) => {
    lines.push(...l);
    process.stderr.write(`${l.join('\n')}\n`);
  };
  const { create: namespace, drop: dropNamespace } = benchNamespaces(core);
  const spec = { version: '7.0', replicas: 3 };

  // --- baseline: the same pods, no operator -----------------------------------------------------
  const bare = async (count: number) => {
    const ns = await namespace('bench-bare');
    const started = now();
    const times = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const rc = {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'RedisCluster',
          metadata: { name: `c${i}`, namespace: ns, uid: 'none', generation: 1 },
          spec,
        } as unknown as RedisCluster;
        const own = <T extends { metadata?: { ownerReferences?: unknown } }>(x: T): T => ({
          ...x,
          metadata: { ...x.metadata, ownerReferences: undefined },
        });
        await core.createNamespacedConfigMap({ namespace: ns, body: own(configMapFor(rc)) });
        await core.createNamespacedSecret({
          namespace: ns,
          body: own(authConfSecretFor(rc, { password: 'bench' })),
        });
        await apps.createNamespacedStatefulSet({
          namespace: ns,
          body: own(statefulSetFor(rc, renderedConfig(rc).key)),
        });
        await until(
          `bare c${i} Ready`,
          async () => {
            const pods = await core.listNamespacedPod({
              namespace: ns,
              labelSelector: `app.kubernetes.io/instance=c${i}`,
            });
            return pods.items.length === spec.replicas && pods.items.every(isReady) ? true : undefined;
          },
          600_000,
          250,
        );
        return now() - started;
      }),
    );
    await dropNamespace(ns);
    return times.sort((a, b) => a - b);
  };

  // --- Tideway ----------------------------------------------------------------------------------
  const ns = await namespace('bench-redis');
  const env = { NATS_URL: bed.natsUrl, TIDEWAY_WATCH_NAMESPACE: ns, TIDEWAY_LEASE_DURATION: '5s' };
  // Each function as its own ServiceAccount, as deployed.
  const kubeconfig = (fn: string) =>
    writeFunctionKubeconfig({ admin: kc, fn, dir: join(bed.dir, 'bench-kube') });
  const watcherPort = await freePort();
  const functions = [
    spawnFunction(
      'watcher',
      {
        ...env,
        TIDEWAY_WATCHER_ID: 'bench-redis',
        KUBECONFIG: await kubeconfig('watcher'),
        TIDEWAY_OPS_PORT: String(watcherPort),
      },
      SERVERLESS,
    ),
  ];
  const handlerPorts: number[] = [];
  for (const fn of ['reconcile', 'health']) {
    const KUBECONFIG = await kubeconfig(fn);
    for (let r = 0; r < 2; r++) {
      const port = await freePort();
      handlerPorts.push(port);
      functions.push(
        spawnFunction(
          fn,
          { ...env, KUBECONFIG, TIDEWAY_REPLICA: String(r), TIDEWAY_OPS_PORT: String(port) },
          SERVERLESS,
        ),
      );
    }
  }
  const get = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...RDC, namespace: ns, name })) as RedisCluster;
  const ready = (name: string, ok: (rc: RedisCluster) => boolean = () => true) =>
    until(
      `${name} Ready`,
      async () => {
        const rc = await get(name);
        const s = rc.status;
        return s?.phase === 'Ready' &&
          s.observedGeneration === rc.metadata.generation &&
          s.readyReplicas === spec.replicas &&
          ok(rc)
          ? rc
          : undefined;
      },
      600_000,
      250,
    );
  /** Apply → Ready per cluster; and the operator's own part: its last pod Ready → cluster Ready. */
  const applied = async (names: string[]) => {
    const started = now();
    const own: number[] = [];
    const times = await Promise.all(
      names.map(async (name) => {
        await custom.createNamespacedCustomObject({
          ...RDC,
          namespace: ns,
          body: { apiVersion: 'tideway.dev/v1alpha1', kind: 'RedisCluster', metadata: { name }, spec },
        });
        await ready(name);
        const at = Date.now();
        const pods = await core.listNamespacedPod({
          namespace: ns,
          labelSelector: `app.kubernetes.io/instance=${name}`,
        });
        if (pods.items.length === 0) throw new Error(`${name}: Ready with no pods`);
        const podsReady = Math.max(
          ...pods.items.map((p) =>
            new Date(
              p.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime ?? 0,
            ).getTime(),
          ),
        );
        own.push(at - podsReady);
        return now() - started;
      }),
    );
    return { times: times.sort((a, b) => a - b), own: own.sort((a, b) => a - b) };
  };
  const row = (label: string, run: { times: number[]; own: number[] }, base: number[]) => {
    const tideway = run.times;
    const t = percentile(tideway, 50);
    const b = percentile(base, 50);
    const tl = tideway.at(-1) ?? Number.NaN;
    const bl = base.at(-1) ?? Number.NaN;
    say(
      `${label}: tideway p50 ${seconds(t)}, all ${seconds(tl)}; bare StatefulSet p50 ${seconds(b)}, all ${seconds(bl)}; ` +
        `ratio p50 ${(t / b).toFixed(2)}x, all ${(tl / bl).toFixed(2)}x; ` +
        `operator's own part (last pod Ready → cluster Ready, ±1 s) p50 ${seconds(percentile(run.own, 50))}, worst ${seconds(run.own.at(-1) ?? Number.NaN)}`,
    );
  };

  try {
    // Measured from a running operator, as a user meets it: processes started, the watcher leading
    // with its first list of RedisClusters done.
    await metricsUntil(
      watcherPort,
      'the watcher to lead and list',
      (page) =>
        /^tideway_watcher_is_leader(\{[^}]*\})? 1$/m.test(page) &&
        /^tideway_watcher_relists_total\{[^}]*kind="RedisCluster"[^}]*\} [1-9]/m.test(page),
    );
    for (const port of handlerPorts) await metricsUntil(port, 'a function to serve', (page) => page !== '');
    row('apply → Ready, 1 cluster of 3', await applied(['one']), await bare(1));
    const many = Array.from({ length: o.clusters }, (_, i) => `m${i}`);
    const baseMany = await bare(o.clusters);
    const tidewayMany = await applied(many);
    row(`apply → Ready, ${o.clusters} clusters of 3 at once`, tidewayMany, baseMany);
    await pool(many.length, 8, (i) =>
      custom.deleteNamespacedCustomObject({ ...RDC, namespace: ns, name: many[i]! }),
    );
    await until(
      'the many clusters gone',
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: ns,
          labelSelector: 'app.kubernetes.io/instance',
        });
        return pods.items.every((p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === 'one')
          ? true
          : undefined;
      },
      300_000,
      500,
    );

    // --- failover ---------------------------------------------------------------------------------
    const secret = await core.readNamespacedSecret({ namespace: ns, name: 'one-auth' });
    const password = Buffer.from(secret.data?.password ?? '', 'base64').toString();
    const svc = await core.readNamespacedService({ namespace: ns, name: 'one' });
    const host = svc.spec?.clusterIP ?? '';
    const after = (await get('one')).spec.failover?.after ?? '5s';
    const times: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const before = await ready('one');
      const master = before.status?.master ?? '';
      const downAt = now();
      await bed.faults.holdDownPod(ns, master);
      await until(
        'a write accepted by the new master',
        async () => {
          const c = await connectRedis({
            host,
            port: 6379,
            password,
            connectTimeoutMs: 300,
            commandTimeoutMs: 300,
          }).catch(() => undefined);
          if (!c) return undefined;
          try {
            return (await c.command('SET', 'bench-failover', String(round))) === 'OK' ? true : undefined;
          } catch {
            return undefined;
          } finally {
            c.close();
          }
        },
        60_000,
        50,
      );
      times.push(now() - downAt);
      process.stderr.write(`[bench] failover ${round + 1}/${o.rounds}: ${seconds(times.at(-1)!)}\n`);
      await bed.faults.releasePod(ns, master);
      // The old master is back as a replica before the next round.
      await ready('one', (rc) => rc.status?.master !== master);
      await sleep(1000);
    }
    times.sort((a, b) => a - b);
    const afterMs = Number.parseFloat(after) * (after.endsWith('ms') ? 1 : 1000);
    say(
      `failover (master held down → write accepted through the Service), ${times.length} rounds: ` +
        `median ${seconds(percentile(times, 50))}, worst ${seconds(times.at(-1)!)}; ` +
        `baseline failover.after ${after}: added median ${ms(percentile(times, 50) - afterMs)}, ` +
        `ratio ${(percentile(times, 50) / afterMs).toFixed(2)}x`,
    );
  } finally {
    await Promise.all(functions.map((f) => f.stop()));
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  }
  return lines;
};
