import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { EtcdCluster } from '../../shared/api/generated.ts';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';
import type { KeyValue } from '../../shared/etcd/types.ts';
import { endpointOf, imageOf } from '../../shared/etcdcluster/names.ts';
import { clientTlsOf } from '../../shared/etcdcluster/tls/ensure.ts';
import { tlsSecretNames } from '../../shared/etcdcluster/tls/sans.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { type bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { etcdctlJob as etcdctlIn } from '../support/etcdctl.ts';
import { logsOnFailure, type Worker } from '../support/functions.ts';
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

/**
 * On a failed test, what the member pods were: address, phase, restarts, and the end of each
 * container's log on the bed (there is no `kubectl logs`), and each cluster's status. A member
 * that never joined says why only there.
 */
export const podLogsOnFailure = (b: ReturnType<typeof bed>, ns: () => string) => {
  beforeEach((ctx) => {
    ctx.onTestFailed(async () => {
      const out: string[] = [];
      const pods = await b.core
        .listNamespacedPod({ namespace: ns(), labelSelector: 'app.kubernetes.io/name=etcd' })
        .catch(() => ({ items: [] as V1Pod[] }));
      for (const p of pods.items) {
        const uid = p.metadata?.uid ?? '';
        const states = (p.status?.containerStatuses ?? []).map(
          (s) => `${s.name} ready=${s.ready} restarts=${s.restartCount} ${JSON.stringify(s.state)}`,
        );
        out.push(
          `--- pod ${p.metadata?.name} ${uid} ip=${p.status?.podIP} ${p.status?.phase}${p.metadata?.deletionTimestamp ? ' deleting' : ''} ---`,
          ...states,
        );
        const dir = join(b.info.dir, 'node', 'pods', uid);
        for (const f of (await readdir(dir).catch(() => [] as string[])).filter((x) => x.endsWith('.log')))
          out.push(`>> ${f}`, (await readFile(join(dir, f), 'utf8').catch(() => '')).slice(-12_000));
      }
      const clusters = (await b.custom
        .listNamespacedCustomObject({ ...ETCD, namespace: ns() })
        .catch(() => ({ items: [] }))) as { items: EtcdCluster[] };
      for (const c of clusters.items)
        out.push(`--- EtcdCluster ${c.metadata.name} status ---`, JSON.stringify(c.status, null, 1));
      process.stderr.write(`${out.join('\n')}\n`);
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
    /**
     * A client on the member pods' IPs (the test runs outside the pod network's DNS); with
     * spec.tls, over https with the cluster's client Secret, verifying members as Tideway does.
     */
    client: async (name: string): Promise<EtcdClient> => {
      const c = await get(name);
      const tls = c.spec.tls
        ? clientTlsOf(
            c,
            Object.fromEntries(
              Object.entries(
                (await b.core.readNamespacedSecret({ namespace: ns(), name: tlsSecretNames(c).client }))
                  .data ?? {},
              ).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
            ),
          )
        : undefined;
      return createEtcdClient({
        endpoints: (await pods(name)).flatMap((p) =>
          p.status?.podIP ? [endpointOf(c, p.status.podIP)] : [],
        ),
        ...(tls ? { tls } : {}),
      });
    },
  };
};

/** etcdctl in a Job from the default etcd image, e.g. at the cluster's Service by its name. */
export const etcdctlJob = (
  b: ReturnType<typeof bed>,
  ns: string,
  job: string,
  args: string[],
  secret?: string,
) => etcdctlIn(b, ns, job, imageOf({ spec: {} }), args, secret);

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
  podLogsOnFailure(b, () => ns);
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

/** A key as etcd holds it, revisions included: what a backup must give back exactly. */
const recordOf = (kv: KeyValue) => ({
  key: kv.key.toString('latin1'),
  value: kv.value.toString('base64'),
  createRevision: kv.createRevision,
  modRevision: kv.modRevision,
  version: kv.version,
});
export type KeyRecord = ReturnType<typeof recordOf>;

/** Every key under `k/` with its value and revisions, in key order. */
export const keysWithRevisions = async (c: EtcdClient): Promise<KeyRecord[]> =>
  (await c.range({ prefix: 'k/', limit: 10_000 })).kvs
    .map(recordOf)
    .sort((a, b) => a.key.localeCompare(b.key));

/** A Secret in the namespace from raw values (base64 done here). */
export const createSecret = (
  b: ReturnType<typeof bed>,
  ns: string,
  name: string,
  data: Record<string, Buffer | string>,
) =>
  b.core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    },
  });
