import { PARTITIONS, STREAM } from '../../shared/events/subjects.ts';
import { type FunctionConfig, nodeArgsFor, type ServerlessConfig } from '../../shared/runtime/config.ts';
import { consumerName } from '../../shared/runtime/durables.ts';
import { namespacedServiceAccount, serviceAccountOf } from '../../shared/runtime/identity.ts';

/**
 * Stands for a served namespace (values `watchNamespaces`) in the names of a namespaced
 * installation; the templates put the namespace in its place. The names themselves are made by
 * the code that makes them locally (consumerName, namespacedServiceAccount), never restated.
 */
export const WATCH_NAMESPACE = '__WATCH_NAMESPACE__';

/** Variables a function's pod takes from the downward API: the field they hold. */
const FIELD_ENV: Record<string, string> = {
  // The restore feed's address, which the cluster's pods connect to: the pod's own.
  TIDEWAY_RESTORE_FEED_HOST: 'status.podIP',
};

/**
 * A worker drains for at most its function's timeout and exits 10 s later whatever happens
 * (shared/runtime/worker.ts); the kubelet waits this much longer before it kills.
 */
export const GRACE_MARGIN_SECONDS = 15;

/** A name for a cluster-wide installation and the template of one for a namespaced one. */
export type ScopedName = { cluster: string; namespaced: string };

/** The function whose ops port serves /lag (functions/watcher/lag.ts): always running, one or more. */
const LAG_SERVER = 'watcher';

/** What the chart needs to know about a function: generated, never edited in the chart. */
export type ChartFunction = {
  /** A long-running process (fixed replicas) rather than an event consumer (scalable). */
  service: boolean;
  /** serverless.yml's tideway.replicas: the plain replica count, and KEDA's maximum. */
  replicas: number;
  memoryMiB?: number;
  /**
   * Node's flags for that memory (nodeArgsFor), which the supervisor passes locally and a pod
   * through NODE_OPTIONS: the image's entrypoint is the worker itself (docs/image.md).
   */
  nodeOptions?: string;
  terminationGracePeriodSeconds: number;
  serviceAccount: ScopedName;
  /**
   * The durable consumers on the stream, `<name>-p<n>` for each of `partitions`, whose summed lag
   * KEDA scales on (event functions only).
   */
  consumer?: ScopedName & { stream: string; lagThreshold: number; partitions: number };
  /** Its HTTP port (TIDEWAY_<NAME>_PORT in its environment): a Service and probes. */
  httpPort?: number;
  /** Serves each event function's lag on its ops port (/lag/<consumer>), which KEDA scales on. */
  servesLag?: true;
  /** Environment variable → downward API field path. */
  fieldEnv: Record<string, string>;
};

const httpPortOf = (name: string, fn: FunctionConfig): number | undefined => {
  const variable = `TIDEWAY_${name.toUpperCase().replace(/-/g, '_')}_PORT`;
  const raw = fn.environment[variable];
  if (raw === undefined) return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    throw new Error(`serverless.yml: functions.${name}.environment.${variable} is ${raw}, not a port`);
  return port;
};

export const chartFunction = (name: string, fn: FunctionConfig): ChartFunction => {
  const sa = serviceAccountOf(name);
  const httpPort = httpPortOf(name, fn);
  const fieldEnv = Object.fromEntries(
    Object.keys(fn.environment).flatMap((k) => (FIELD_ENV[k] ? [[k, FIELD_ENV[k]]] : [])),
  );
  return {
    service: fn.tideway.service,
    replicas: fn.tideway.replicas,
    ...(fn.memorySize ? { memoryMiB: fn.memorySize } : {}),
    ...(nodeArgsFor(fn).length > 0 ? { nodeOptions: nodeArgsFor(fn).join(' ') } : {}),
    terminationGracePeriodSeconds: fn.timeout + GRACE_MARGIN_SECONDS,
    serviceAccount: { cluster: sa, namespaced: namespacedServiceAccount(sa, WATCH_NAMESPACE) },
    ...(fn.tideway.service
      ? {}
      : {
          consumer: {
            stream: STREAM,
            cluster: consumerName(name),
            namespaced: consumerName(name, WATCH_NAMESPACE),
            // Events one replica takes at once: more waiting than that, per replica, adds one.
            lagThreshold: fn.reservedConcurrency,
            partitions: PARTITIONS,
          },
        }),
    ...(httpPort ? { httpPort } : {}),
    ...(name === LAG_SERVER ? { servesLag: true as const } : {}),
    fieldEnv,
  };
};

export const chartFunctions = (config: ServerlessConfig): Record<string, ChartFunction> =>
  Object.fromEntries(
    Object.entries(config.functions)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, fn]) => [name, chartFunction(name, fn)]),
  );
