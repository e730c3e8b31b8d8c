import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { connectRedis } from '../../shared/redis/client.ts';
import { type bed, until } from './bed.ts';
import { spawnWorker, type Worker } from './functions.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
export const SERVERLESS = join(
  resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'),
  'serverless.yml',
);

/**
 * The product's Redis functions (serverless.yml), two replicas each, watching one namespace, each
 * acting as its own ServiceAccount (infra/rbac): the tests prove the roles are enough.
 */
export const startRedisFunctions = async (
  b: ReturnType<typeof bed>,
  ns: string,
  id: string,
  /** Replicas per handler function (default 2 each); extra environment per function. */
  o: { replicas?: Record<string, number>; env?: Record<string, Record<string, string>> } = {},
): Promise<Worker[]> => {
  const workers = [await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id })];
  for (const fn of ['reconcile', 'health'])
    for (let r = 0; r < (o.replicas?.[fn] ?? 2); r++)
      workers.push(await startFunction(b, ns, id, fn, { TIDEWAY_REPLICA: String(r), ...o.env?.[fn] }));
  return workers;
};

/**
 * The product's serverless.yml with one function's settings changed (`maximumRetryAttempts: 1`),
 * written into `dir`; handler paths made absolute, so that they still name the product's modules.
 */
export const serverlessWith = async (dir: string, fn: string, change: Record<string, unknown>) => {
  const config = parse(await readFile(SERVERLESS, 'utf8')) as {
    functions: Record<string, { handler: string }>;
  };
  for (const f of Object.values(config.functions)) f.handler = resolve(dirname(SERVERLESS), f.handler);
  config.functions[fn] = { ...(config.functions[fn] as { handler: string }), ...change };
  const file = join(dir, `serverless-${fn}-${Object.keys(change).join('-')}.yml`);
  await writeFile(file, stringify(config));
  return file;
};

/** One replica of one product function, as its own ServiceAccount, watching one namespace. */
export const startFunction = async (
  b: ReturnType<typeof bed>,
  ns: string,
  id: string,
  fn: string,
  env: Record<string, string> = {},
  serverless = SERVERLESS,
): Promise<Worker> => {
  const admin = new KubeConfig();
  admin.loadFromFile(b.info.kubeconfig);
  const dir = join(b.info.dir, 'function-credentials', id);
  return spawnWorker(
    fn,
    {
      NATS_URL: b.info.natsUrl,
      TIDEWAY_WATCH_NAMESPACE: ns,
      TIDEWAY_LEASE_DURATION: '5s',
      KUBECONFIG: await writeFunctionKubeconfig({ admin, fn, dir }),
      ...env,
    },
    serverless,
  );
};

/** Lines where a function was refused by the API server (403), from its own log. */
export const refusals = (workers: readonly Worker[]) =>
  workers.flatMap((w) =>
    w
      .output()
      .split('\n')
      .filter((l) => /forbidden|HTTP-Code: 403|"code":403/i.test(l)),
  );

/** RedisCluster helpers for one namespace. */
export const redisClusters = (b: ReturnType<typeof bed>, ns: () => string) => {
  const get = async (name: string) =>
    (await b.custom.getNamespacedCustomObject({ ...RDC, namespace: ns(), name })) as RedisCluster;
  return {
    get,
    /** Server-side apply as a user would, with kubectl. */
    apply: (name: string, spec: Record<string, unknown>) => b.applyTideway('RedisCluster', ns(), name, spec),
    pods: async (name: string) =>
      (
        await b.core.listNamespacedPod({
          namespace: ns(),
          labelSelector: `app.kubernetes.io/name=redis,app.kubernetes.io/instance=${name}`,
        })
      ).items.sort((x, y) => (x.metadata?.name ?? '').localeCompare(y.metadata?.name ?? '')),
    /**
     * Ready, with the status describing the latest generation and agreeing with the pods as they
     * are now (a status written just before pods were deleted would otherwise pass).
     */
    ready: (name: string, timeoutMs = 180_000) =>
      until(
        `${name} Ready`,
        async () => {
          const rc = await get(name);
          // Each unmet clause is thrown, so that a timeout says which one never held.
          if (rc.status?.phase !== 'Ready' || rc.status.observedGeneration !== rc.metadata.generation)
            throw new Error(
              `phase ${rc.status?.phase}, observedGeneration ${rc.status?.observedGeneration} of ${rc.metadata.generation}; ` +
                `conditions ${JSON.stringify((rc.status?.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message]))}`,
            );
          const list = await b.core.listNamespacedPod({
            namespace: ns(),
            labelSelector: `app.kubernetes.io/name=redis,app.kubernetes.io/instance=${name}`,
          });
          const live = list.items.filter(
            (p) =>
              !p.metadata?.deletionTimestamp &&
              p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          );
          const nodes = new Set((rc.status.nodes ?? []).filter((n) => n.ready).map((n) => n.pod));
          // The cluster's Ready transition comes after every pod's: it has seen these pods.
          const since = (c?: { lastTransitionTime?: Date | string }) =>
            c?.lastTransitionTime ? Math.floor(new Date(c.lastTransitionTime).getTime() / 1000) : 0;
          const readySince = since(
            (rc.status.conditions as { type: string; lastTransitionTime?: string }[] | undefined)?.find(
              (c) => c.type === 'Ready',
            ),
          );
          const podReadySince = (p: V1Pod) => since(p.status?.conditions?.find((c) => c.type === 'Ready'));
          const unmet = [
            ...live
              .filter((p) => podReadySince(p) > readySince)
              .map(
                (p) => `${p.metadata?.name} Ready at ${podReadySince(p)}, after the cluster's ${readySince}`,
              ),
            ...(live.length !== list.items.length
              ? [`${live.length} of ${list.items.length} pods live and Ready`]
              : []),
            ...(live.length !== (rc.spec.replicas ?? 3)
              ? [`${live.length} live pods, ${rc.spec.replicas ?? 3} desired`]
              : []),
            // ...and has counted them since the last of them came or went (e.g. after a scale-down).
            ...(rc.status.readyReplicas !== live.length
              ? [`readyReplicas ${rc.status.readyReplicas}, ${live.length} live pods`]
              : []),
            ...live
              .filter((p) => !nodes.has(p.metadata?.name ?? ''))
              .map((p) => `${p.metadata?.name} not a ready node in status`),
          ];
          if (unmet.length > 0) throw new Error(unmet.join('; '));
          return rc;
        },
        timeoutMs,
        500,
      ),
    password: async (name: string) =>
      Buffer.from(
        (await b.core.readNamespacedSecret({ namespace: ns(), name: `${name}-auth` })).data?.password ?? '',
        'base64',
      ).toString(),
  };
};

export const redisAt = (ip: string, password: string, timeoutMs = 3000) =>
  connectRedis({ host: ip, port: 6379, password, connectTimeoutMs: timeoutMs, commandTimeoutMs: timeoutMs });
export const ipOf = (p: V1Pod | undefined) => p?.status?.podIP ?? '';

/** Reasons of the Events recorded about one object, oldest first. */
const eventsOf = async (b: ReturnType<typeof bed>, ns: string, name: string) =>
  (
    JSON.parse(await b.kubectl('get', 'events.events.k8s.io', '-n', ns, '-o', 'json')) as {
      items: {
        reason?: string;
        note?: string;
        regarding?: { name?: string };
        metadata?: { creationTimestamp?: string };
      }[];
    }
  ).items
    .filter((e) => e.regarding?.name === name)
    .sort((x, y) => (x.metadata?.creationTimestamp ?? '').localeCompare(y.metadata?.creationTimestamp ?? ''));

/**
 * For `expect.poll(() => eventReasons(…), EVENTS_RECORDED)`: functions write status first and
 * record the Event after, so an Event is waited for, not raced, once a status shows the outcome.
 */
export const EVENTS_RECORDED = { timeout: 15_000, interval: 200 } as const;

export const eventReasons = async (b: ReturnType<typeof bed>, ns: string, name: string) =>
  (await eventsOf(b, ns, name)).map((e) => e.reason ?? '');

/** `reason: note` of each Event about the object, oldest first: what a failed assertion prints. */
export const eventNotes = async (b: ReturnType<typeof bed>, ns: string, name: string) =>
  (await eventsOf(b, ns, name)).map((e) => `${e.reason ?? ''}: ${e.note ?? ''}`);

/**
 * Writes through an address (the master Service) until stopped, reconnecting on any error; a key
 * counts as acknowledged when WAIT says a replica has it, as a careful client would require.
 */
export const startWriter = (host: string, password: string, prefix: string) => {
  const acked: string[] = [];
  let failed = 0;
  let stopped = false;
  const loop = (async () => {
    let c: Awaited<ReturnType<typeof redisAt>> | undefined;
    for (let i = 0; !stopped; i++) {
      try {
        c ??= await redisAt(host, password, 1000);
        await c.command('SET', `${prefix}${i}`, String(i));
        if (Number(await c.command('WAIT', 1, 1000)) >= 1) acked.push(`${prefix}${i}`);
      } catch {
        failed++;
        c?.close();
        c = undefined;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    c?.close();
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return { acked, failed };
    },
  };
};

/** The write quorum a server runs with, as CONFIG GET reports it. */
export const quorumAt = async (ip: string, password: string) => {
  const c = await redisAt(ip, password);
  try {
    const get = async (k: string) => ((await c.command('CONFIG', 'GET', k)) as string[])[1];
    return { toWrite: await get('min-replicas-to-write'), maxLag: await get('min-replicas-max-lag') };
  } finally {
    c.close();
  }
};

/** Keys missing on a server, of those given (MGET in chunks). */
export const missingKeys = async (ip: string, password: string, keys: readonly string[]) => {
  const c = await redisAt(ip, password);
  try {
    const missing: string[] = [];
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const values = (await c.command('MGET', ...chunk)) as (string | null)[];
      missing.push(...chunk.filter((_, j) => values[j] === null));
    }
    return missing;
  } finally {
    c.close();
  }
};
