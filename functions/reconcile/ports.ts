import { CoreV1Api, type V1Pod, type V1StatefulSet } from '@kubernetes/client-node';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { type EventRecorder, handlerRecorder } from '../../shared/kube/events.ts';
import type { Auth } from '../../shared/rediscluster/auth.ts';
import { addFinalizer, finalize } from '../../shared/rediscluster/finalizer.ts';
import { labelPod, listLabelledPods, readAuth } from '../../shared/rediscluster/kube.ts';
import type { Role } from '../../shared/rediscluster/names.ts';
import { applyOwned, type Refusal } from '../../shared/rediscluster/owned.ts';
import { type Instance, onInstance, probeInstances } from '../../shared/rediscluster/probe.ts';
import { switchover } from '../../shared/rediscluster/switchover.ts';
import type { HandlerContext, Outcome } from '../../shared/runtime/handler.ts';
import { advanceBootstrap } from './bootstrap.ts';
import { rollPassword } from './password.ts';

/** What reconcile does to the outside world (Kubernetes, the Redis servers, Events): a test fakes it. */
export type ReconcilePorts = {
  /** Deletion (shared/rediscluster/finalizer.ts): true once the finalizer is removed. */
  finalize: (rc: RedisCluster) => Promise<boolean>;
  addFinalizer: (rc: RedisCluster) => Promise<unknown>;
  /** The cluster's passwords; creates the generated Secret. Throws OwnershipConflict for one not its own. */
  readAuth: (rc: RedisCluster) => Promise<Auth>;
  /** Every pod with the cluster's labels, its own and others (splitPods tells them apart). */
  listLabelledPods: (rc: RedisCluster) => Promise<V1Pod[]>;
  /** Owned objects by server-side apply, StatefulSet last; the refusal when one is not this cluster's. */
  applyOwned: (
    o: Omit<Parameters<typeof applyOwned>[0], 'kube' | 'fence'>,
  ) => Promise<{ sts: V1StatefulSet } | Refusal>;
  /** INFO of every pod (with inspectAuth, the passwords each accepts). */
  probeInstances: (
    cluster: string,
    pods: readonly V1Pod[],
    passwords: readonly string[],
    o?: { inspectAuth?: boolean; inspectQuorum?: boolean },
  ) => Promise<Instance[]>;
  /** Rolls a password change onto the instances (password.ts). */
  rollPassword: (
    o: Omit<Parameters<typeof rollPassword>[0], 'ctx' | 'recorder'>,
  ) => Promise<{ password: string; waiting?: string }>;
  /** One command on the instance at `ip`. */
  command: (ip: string, password: string, args: readonly string[]) => Promise<unknown>;
  /** The role label of one pod (null removes it); the Services follow it. */
  labelPod: (namespace: string, pod: string, role: Role | null) => Promise<void>;
  recordEvent: EventRecorder['record'];
  /** A planned change of master (shared/rediscluster/switchover.ts). */
  switchover: (
    o: Omit<Parameters<typeof switchover>[0], 'kube' | 'log' | 'recorder' | 'fence'>,
  ) => Promise<void>;
  /** Deletes that very pod: with its uid as a precondition, when given. */
  deletePod: (namespace: string, pod: string, uid: string | undefined) => Promise<unknown>;
  /** spec.bootstrap.fromBackup (bootstrap.ts): what this run should do next. */
  advanceBootstrap: (o: Omit<Parameters<typeof advanceBootstrap>[0], 'ctx' | 'recorder'>) => Promise<Outcome>;
};

export const realPorts = (ctx: HandlerContext): ReconcilePorts => {
  const recorder = handlerRecorder(ctx, 'reconcile');
  return {
    finalize: (rc) => finalize(ctx.kube, rc),
    addFinalizer: (rc) => addFinalizer(ctx.kube, rc),
    readAuth: (rc) => readAuth(ctx.kube, rc, true),
    listLabelledPods: (rc) => listLabelledPods(ctx.kube, rc),
    applyOwned: (o) => applyOwned({ ...o, kube: ctx.kube, fence: ctx.fence }),
    probeInstances: (cluster, pods, passwords, o) => probeInstances(cluster, pods, passwords, undefined, o),
    rollPassword: (o) => rollPassword({ ...o, ctx, recorder }),
    command: (ip, password, args) =>
      onInstance(ip, password, (r) => {
        // Again once connected: a run that stalled while connecting must not send it.
        ctx.fence();
        return r.command(...args);
      }),
    labelPod: (namespace, pod, role) => labelPod(ctx.kube, namespace, pod, role),
    recordEvent: (e) => recorder.record(e),
    switchover: (o) => switchover({ ...o, kube: ctx.kube, log: ctx.log, recorder, fence: ctx.fence }),
    deletePod: (namespace, name, uid) =>
      ctx.kube.makeApiClient(CoreV1Api).deleteNamespacedPod({
        namespace,
        name,
        ...(uid ? { body: { preconditions: { uid } } } : {}),
      }),
    advanceBootstrap: (o) => advanceBootstrap({ ...o, ctx, recorder }),
  };
};
