import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { EtcdCluster } from '../../shared/api/generated.ts';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';
import { imageOf } from '../../shared/etcdcluster/names.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { type bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { etcdctlJob as etcdctlIn } from '../support/etcdctl.ts';
import type { Worker } from '../support/functions.ts';
import { refusals, startFunction } from '../support/redis.ts';

const ETCD = TIDEWAY_KINDS.EtcdCluster;

/** The watcher and two etcd-reconcile replicas, each as its own ServiceAccount, for one namespace. */
export const startEtcdFunctions = async (
  b: ReturnType<typeof bed>,
  ns: string,
  id: string,
  reconcileEnv: Record<string, string> = {},
) => {
  const workers = [await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id })];
  for (let r = 0; r < 2; r++)
    workers.push(
      await startFunction(b, ns, id, 'etcd-reconcile', {
        TIDEWAY_REPLICA: String(r),
        TIDEWAY_LOG_LEVEL: 'info',
        ...reconcileEnv,
      }),
    );
  return workers;
};

/** On a failed test, what the functions logged: the steps they took and why they waited. */
export const logsOnFailure = (workers: () => readonly Worker[]) => {
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      for (const w of workers())
        process.stderr.write(`--- function ${w.pid} ---\n${w.output().slice(-20_000)}\n`);
    });
  });
};

/** EtcdCluster helpers for one namespace. */
export const etcdClusters = (b: ReturnType<typeof bed>, ns: () => string) => {
  const get = async (name: string) =>
    (await b.custom.getNamespacedCustomObject({ ...ETCD, namespace: ns(), name })) as EtcdCluster;
  const pods = async (name: string): Promise<V1Pod[]> =>
    (
      await b.core.listNamespacedPod({
        namespace: ns(),
        labelSelector: `app.kubernetes.io/name=etcd,app.kubernetes.io/instance=${name}`,
      })
    ).items.sort((x, y) => (x.metadata?.name ?? '').localeCompare(y.metadata?.name ?? ''));
  return {
    get,
    pods,
    /** Server-side apply as a user would, with kubectl. */
    apply: (name: string, spec: Record<string, unknown>) => b.applyTideway('EtcdCluster', ns(), name, spec),
    /**
     * Ready for the current generation with `size` healthy voting members, the member list and
     * the pods agreeing (a status written before a pod went would otherwise pass).
     */
    ready: (name: string, size: number, timeoutMs = 240_000) =>
      until(
        `${name} Ready with ${size} members`,
        async () => {
          const c = await get(name);
          const s = c.status;
          const ready = (s?.conditions as { type: string; status: string }[] | undefined)?.find(
            (x) => x.type === 'Ready',
          );
          if (
            s?.phase !== 'Ready' ||
            ready?.status !== 'True' ||
            s.observedGeneration !== c.metadata.generation
          )
            return undefined;
          const live = (await pods(name)).filter((p) => !p.metadata?.deletionTimestamp);
          const voters = (s.members ?? []).filter((m) => !m.learner && m.healthy);
          return voters.length === size && live.length === size && s.size === size ? c : undefined;
        },
        timeoutMs,
        500,
      ),
    /** A client on the member pods' IPs (the test runs outside the pod network's DNS). */
    client: async (name: string): Promise<EtcdClient> =>
      createEtcdClient({
        endpoints: (await pods(name)).flatMap((p) =>
          p.status?.podIP ? [`http://${p.status.podIP}:2379`] : [],
        ),
      }),
  };
};

/** etcdctl in a Job from the default etcd image, e.g. at the cluster's Service by its name. */
export const etcdctlJob = (b: ReturnType<typeof bed>, ns: string, job: string, args: string[]) =>
  etcdctlIn(b, ns, job, imageOf({ spec: {} }), args);

/**
 * The usual e2e set-up, as hooks of the calling describe: Tideway's CRDs, a namespace of its own,
 * the watcher and two etcd-reconcile replicas for it (and `more`), their logs on a failure; afterwards the
 * functions stop, the namespace goes, and none of them was refused anything (least privilege).
 */
export const etcdFunctionsFor = (
  b: ReturnType<typeof bed>,
  prefix: string,
  /** More functions for the namespace (e.g. two backup replicas), each with its environment. */
  more: readonly { fn: string; env?: Record<string, string> }[] = [],
  /** etcd-reconcile's extra environment, made before it starts (e.g. TIDEWAY_IMAGE, once built). */
  reconcileEnv: () => Promise<Record<string, string>> = async () => ({}),
) => {
  let ns = '';
  let workers: Worker[] = [];
  logsOnFailure(() => workers);
  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, prefix);
    workers = await startEtcdFunctions(b, ns, prefix, await reconcileEnv());
    for (const m of more) workers.push(await startFunction(b, ns, prefix, m.fn, m.env ?? {}));
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    expect(refusals(workers)).toEqual([]);
  });
  return { ns: () => ns, etcd: etcdClusters(b, () => ns) };
};
