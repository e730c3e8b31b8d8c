import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { connectBus } from '../bus/connect.ts';
import { jetStreamPublisher } from '../bus/publisher.ts';
import { zBusReplicas } from '../bus/replicas.ts';
import { ensureStream } from '../bus/stream.ts';
import { zNamespaceName } from '../kube/names.ts';
import { loadServerless } from './config.ts';
import type { Deps, Handler, Service } from './handler.ts';
import { checkIdentity } from './identity.ts';
import { loadExport, loadFailureStatus, loadLockKey } from './load-handler.ts';
import { createLogger } from './logger.ts';
import { createMetrics } from './metrics.ts';
import { objectLocks } from './object-lock.ts';
import { startOpsServer } from './ops-server.ts';
import { stopBudget } from './stop-budget.ts';

export const zWorkerEnv = z.object({
  NATS_URL: z.string().min(1, 'NATS_URL is required (e.g. nats://127.0.0.1:4222)'),
  TIDEWAY_SERVERLESS: z.string().default('serverless.yml'),
  TIDEWAY_OPS_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  TIDEWAY_NATS_REPLICAS: zBusReplicas,
  /** Where /metrics, /healthz and /readyz listen: loopback locally, the pod's address in a pod. */
  TIDEWAY_OPS_HOST: z.string().min(1).default('127.0.0.1'),
  TIDEWAY_REPLICA: z.string().default('0'),
  /**
   * How long a replica keeps an object's lock after a run, for the object's next event (no round
   * trip then); 0 gives it back at once. Given back early to whoever asks for it.
   */
  TIDEWAY_LOCK_KEEP_MS: z.coerce.number().int().min(0).max(60_000).default(10_000),
  /** Set by the supervisor: the parent this worker must outlive by no more than a second. */
  TIDEWAY_SUPERVISOR_PID: z.coerce.number().int().positive().optional(),
  /** One namespace only: the watcher watches it, handler functions consume only its events. */
  TIDEWAY_WATCH_NAMESPACE: zNamespaceName.optional(),
  /**
   * Seconds between SIGTERM and the SIGKILL that follows it (the pod's
   * terminationGracePeriodSeconds; Kubernetes' default): the whole stop fits in it. Kubernetes
   * sets no bound; a function's pod has its timeout (up to an hour) plus a margin.
   */
  TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS: z.coerce.number().int().min(2).max(86_400).default(30),
});

/**
 * One replica of one function: connects to the bus and Kubernetes, then either consumes events
 * (handler functions) or runs (services), with /metrics, /healthz and /readyz on the side.
 * SIGTERM drains in-flight work before exiting.
 */
export const runWorker = async (name: string, env: NodeJS.ProcessEnv = process.env) => {
  const parsed = zWorkerEnv.safeParse(env);
  const log = createLogger({ function: name, replica: env.TIDEWAY_REPLICA ?? '0' });
  if (!parsed.success) {
    log.error('bad environment', {
      problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
    });
    process.exit(78);
  }
  const e = parsed.data;
  // A supervisor that dies (SIGKILL, OOM) cannot stop its workers: they notice by themselves,
  // from the first moment on, since it may die while they are still starting.
  let supervisorGone = false;
  let onSupervisorGone: () => void = () => process.exit(0);
  if (e.TIDEWAY_SUPERVISOR_PID) {
    const gone = () => {
      if (supervisorGone) return;
      supervisorGone = true;
      log.warn('supervisor gone; stopping');
      onSupervisorGone();
    };
    process.channel?.unref();
    process.on('disconnect', gone);
    setInterval(() => process.ppid !== e.TIDEWAY_SUPERVISOR_PID && gone(), 500).unref();
  }
  const file = resolve(e.TIDEWAY_SERVERLESS);
  const config = await loadServerless(file);
  const fn = config.functions[name];
  if (!fn)
    throw new Error(
      `${file} defines no function ${name}; it has ${Object.keys(config.functions).join(', ')}`,
    );
  const entry = await loadExport(file, fn.handler);
  if (fn.tideway.identity === 'own') {
    // Fail closed: never act as anyone but the function's own ServiceAccount (not cluster-admin).
    const { kubeHttp } = await import('../kube/lite/http.ts');
    const { loadKubeConnection } = await import('../kube/lite/connection.ts');
    try {
      const user = await checkIdentity(kubeHttp(loadKubeConnection(env)), name, {
        watchNamespace: e.TIDEWAY_WATCH_NAMESPACE,
      });
      log.info('identity', { user });
    } catch (error) {
      log.error('not starting', {
        reason: (error as { name?: string }).name,
        error: (error as Error).message,
      });
      process.exit(78);
    }
  }

  const metrics = createMetrics({
    tideway_events_received_total: 'Events delivered to this function',
    tideway_events_handled_total: 'Events settled, by outcome',
    tideway_handler_duration_seconds: 'Handler run time',
    tideway_consumer_lag: 'Events not yet settled by this function (pending + unacked)',
  });
  const bus = await connectBus(e.NATS_URL, `tideway-${name}-${e.TIDEWAY_REPLICA}`);
  // One NATS server locally, a three-server JetStream cluster in production (TIDEWAY_NATS_REPLICAS).
  const replicas = e.TIDEWAY_NATS_REPLICAS;
  try {
    await ensureStream(bus.jsm, { replicas });
  } catch (error) {
    log.error('the event stream cannot be made', {
      replicas,
      error: (error as Error).message,
      hint:
        replicas > 1
          ? `TIDEWAY_NATS_REPLICAS=${replicas} needs a JetStream cluster of at least ${replicas} servers`
          : undefined,
    });
    process.exit(78);
  }
  const base: Omit<Deps, 'kube'> = {
    publisher: jetStreamPublisher(bus.js),
    log,
    metrics,
    clock: () => new Date(),
    env: { ...config.provider.environment, ...fn.environment, ...env },
  };
  const ops = await startOpsServer({
    metrics,
    ready: () => !bus.nc.isClosed(),
    port: e.TIDEWAY_OPS_PORT,
    hostname: e.TIDEWAY_OPS_HOST,
  });

  let stop: (drainMs?: number) => Promise<void>;
  if (fn.tideway.service) {
    const svc = await (entry as Service)({ ...base, function: name, bus });
    if (svc.routes) ops.mount(svc.routes);
    stop = () => svc.stop();
  } else {
    // Loaded only here: services (the watcher) stay without client-node's generated API.
    const { KubeConfig } = await import('@kubernetes/client-node');
    const { startConsumer } = await import('./consumer.ts');
    const kube = new KubeConfig();
    kube.loadFromDefault();
    const deps: Deps = { ...base, kube };
    // A released lock is kept a while: the next event of the same object here needs no round trip.
    const locks = await objectLocks(bus, {
      owner: `${hostname()}/${process.pid}`,
      replicas,
      keepMs: e.TIDEWAY_LOCK_KEEP_MS,
    });
    const lockKey = await loadLockKey(file, fn.handler);
    const failureStatus = await loadFailureStatus(file, fn.handler);
    const consumer = await startConsumer({
      bus,
      name,
      fn,
      handler: entry as Handler,
      ...(lockKey ? { lockKey } : {}),
      ...(failureStatus ? { failureStatus } : {}),
      deps,
      locks,
      ...(e.TIDEWAY_WATCH_NAMESPACE ? { namespace: e.TIDEWAY_WATCH_NAMESPACE } : {}),
    });
    stop = async (drainMs) => {
      await consumer.stop(drainMs);
      await locks.close();
    };
  }
  log.info('started', { ops: ops.url, events: fn.events.map((ev) => ev.cloudevent) });

  let stopping = false;
  /**
   * Drain, then exit. Bounded: with NATS or the API server gone, closing can wait forever, and a
   * worker must never outlive its reason to run. Without a supervisor nobody waits for the drain.
   */
  const budget = stopBudget(e.TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS, fn.timeout);
  const shutdown = async (signal: string, drainMs = budget.drainMs) => {
    if (stopping) return;
    stopping = true;
    log.info('draining', { signal, drainMs });
    // Before the SIGKILL: a handler that ignores cancellation must not take the stop past it.
    setTimeout(() => {
      log.error('shutdown did not finish in time; exiting', { signal });
      process.exit(1);
    }, budget.exitMs).unref();
    await stop(drainMs).catch((error: unknown) => log.error('stop failed', { error }));
    await bus.close();
    await ops.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  onSupervisorGone = () => void shutdown('supervisor gone', Math.min(5000, budget.drainMs));
};

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const name = process.argv[2];
  if (!name) {
    process.stderr.write('usage: worker.ts <function>\n');
    process.exit(64);
  }
  await runWorker(name);
}
