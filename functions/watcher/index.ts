import { hostname } from 'node:os';
import { z } from 'zod';
import { busReplicas } from '../../shared/bus/replicas.ts';
import type { EventPublisher } from '../../shared/bus/types.ts';
import { loadKubeConnection } from '../../shared/kube/lite/connection.ts';
import { type KubeHttp, kubeHttp } from '../../shared/kube/lite/http.ts';
import { zNamespaceName } from '../../shared/kube/names.ts';
import { toMs } from '../../shared/runtime/config.ts';
import type { Service } from '../../shared/runtime/handler.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { Metrics } from '../../shared/runtime/metrics.ts';
import { type CursorStore, kvCursorStore } from './cursor.ts';
import { inNamespace, WATCHED } from './kinds.ts';
import { lagRoutes } from './lag.ts';
import { electLeader } from './leader.ts';
import { listWatch } from './list-watch.ts';
import { createSync } from './sync.ts';
import { createTicks } from './ticks.ts';

export type WatcherOptions = {
  kube: KubeHttp;
  publisher: EventPublisher;
  store: CursorStore;
  log: Logger;
  metrics: Metrics;
  identity: string;
  /** Namespace of the Lease. */
  namespace: string;
  /** Watch only this namespace (default: all). */
  watchNamespace?: string;
  source: string;
  healthIntervalMs: number;
  relistIntervalMs: number;
  inactivityTimeoutMs: number;
  leaseDurationMs: number;
};

const duration = z
  .string()
  .regex(/^\d+(ms|s|m)$/, 'like 500ms, 5s or 2m')
  .transform(toMs);
const zEnv = z.object({
  TIDEWAY_WATCHER_ID: z.string().min(1).default(`${hostname()}-${process.pid}`),
  TIDEWAY_NAMESPACE: z.string().min(1).default('tideway-system'),
  TIDEWAY_CLUSTER_ID: z.string().min(1).optional(),
  TIDEWAY_WATCH_NAMESPACE: zNamespaceName.optional(),
  TIDEWAY_HEALTH_INTERVAL: duration.default(2000),
  TIDEWAY_RELIST_INTERVAL: duration.default(300_000),
  TIDEWAY_WATCH_INACTIVITY: duration.default(120_000),
  TIDEWAY_LEASE_DURATION: duration.default(15_000),
});

/** A stable id of the Kubernetes cluster for CloudEvents' `source`: the kube-system namespace uid. */
const clusterSource = async (kube: KubeHttp, override?: string) => {
  if (override) return `/tideway/clusters/${override}`;
  const ns = await kube.request<{ metadata?: { uid?: string } }>('GET', '/api/v1/namespaces/kube-system');
  return `/tideway/clusters/${ns.metadata?.uid ?? 'unknown'}`;
};

/**
 * A watcher scoped to one namespace has its own Lease and cursor bucket, so it can run beside a
 * cluster-wide one (or another namespace's) without either deleting the other's cursor entries.
 */
const leaseName = (watchNamespace?: string) =>
  watchNamespace ? `tideway-watcher-${watchNamespace}` : 'tideway-watcher';

/** Objects a paged list may leave waiting to be published before it fetches the next page. */
const LIST_BACKLOG = 1000;

/** The active part of the watcher: list+watch every kind, publish changes, tick. */
const runLeader = (o: WatcherOptions) => {
  let stopped = false;
  let stopInner: (() => Promise<void>) | undefined;
  const ready = (async () => {
    let cursor: Awaited<ReturnType<CursorStore['load']>> | undefined;
    for (let attempt = 1; !stopped && !cursor; attempt++) {
      try {
        cursor = await o.store.load();
      } catch (error) {
        o.log.warn('cannot read the cursor yet', { attempt, error });
        await new Promise((r) => setTimeout(r, Math.min(5000, 200 * attempt)));
      }
    }
    if (stopped || !cursor) return;
    o.log.info('watching', { cursor: cursor.size });
    const sync = createSync({ ...o, cursor });
    const ticks = createTicks({ ...o });
    const watched = o.watchNamespace ? inNamespace(WATCHED, o.watchNamespace) : WATCHED;
    const watches = watched.map((w) =>
      listWatch(
        o.kube,
        w,
        {
          onList: () => {
            const s = sync.beginList(w);
            const t = ticks.beginList(w.kind);
            return {
              page: async (objs) => {
                s.page(objs);
                t.page(objs);
                await sync.drained(LIST_BACKLOG);
              },
              end: () => {
                s.end();
                t.end();
              },
            };
          },
          onEvent: (phase, obj) => {
            sync.observe(w, phase, obj);
            ticks.observe(w.kind, phase, obj);
          },
        },
        {
          log: o.log,
          inactivityTimeoutMs: o.inactivityTimeoutMs,
          relistIntervalMs: o.relistIntervalMs,
          onRestart: () => o.metrics.inc('tideway_watcher_watch_restarts_total', { kind: w.kind }),
          onRelist: () => o.metrics.inc('tideway_watcher_relists_total', { kind: w.kind }),
        },
      ),
    );
    stopInner = async () => {
      ticks.stop();
      await Promise.all(watches.map((w) => w.stop()));
      await sync.stop();
    };
  })();
  return {
    stop: async () => {
      stopped = true;
      await ready;
      await stopInner?.();
    },
  };
};

/** Starts the watcher: a standby until it holds the Lease, then the one active publisher. */
export const startWatcher = (o: WatcherOptions) => {
  let active: ReturnType<typeof runLeader> | undefined;
  o.metrics.set('tideway_watcher_is_leader', 0);
  const leader = electLeader(o.kube, {
    namespace: o.namespace,
    name: leaseName(o.watchNamespace),
    identity: o.identity,
    durationMs: o.leaseDurationMs,
    log: o.log,
    onStartedLeading: () => {
      o.metrics.set('tideway_watcher_is_leader', 1);
      active = runLeader(o);
    },
    onStoppedLeading: async () => {
      o.metrics.set('tideway_watcher_is_leader', 0);
      await active?.stop();
      active = undefined;
    },
  });
  return { isLeader: leader.isLeader, stop: () => leader.stop() };
};

/** The `watcher` function of serverless.yml. */
export const start: Service = async (ctx) => {
  const parsed = zEnv.safeParse(ctx.env);
  if (!parsed.success)
    throw new Error(
      `watcher: bad environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  // Its own small client: the watcher needs a handful of calls, not client-node's whole API.
  const kube = kubeHttp(loadKubeConnection(ctx.env));
  const watcher = startWatcher({
    kube,
    publisher: ctx.publisher,
    store: await kvCursorStore(ctx.bus.nc, leaseName(e.TIDEWAY_WATCH_NAMESPACE), busReplicas(ctx.env)),
    ...(e.TIDEWAY_WATCH_NAMESPACE ? { watchNamespace: e.TIDEWAY_WATCH_NAMESPACE } : {}),
    log: ctx.log,
    metrics: ctx.metrics,
    identity: e.TIDEWAY_WATCHER_ID,
    namespace: e.TIDEWAY_NAMESPACE,
    source: await clusterSource(kube, e.TIDEWAY_CLUSTER_ID),
    healthIntervalMs: e.TIDEWAY_HEALTH_INTERVAL,
    relistIntervalMs: e.TIDEWAY_RELIST_INTERVAL,
    inactivityTimeoutMs: e.TIDEWAY_WATCH_INACTIVITY,
    leaseDurationMs: e.TIDEWAY_LEASE_DURATION,
  });
  // Every replica, leader or not, answers KEDA: the lag is read from NATS, not from the watch.
  return {
    stop: watcher.stop,
    routes: lagRoutes(ctx.bus.jsm, e.TIDEWAY_WATCH_NAMESPACE ? { namespace: e.TIDEWAY_WATCH_NAMESPACE } : {}),
  };
};
