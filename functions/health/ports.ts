import type { V1Pod } from '@kubernetes/client-node';
import type { RedisCluster } from '../../shared/api/generated.ts';
import type { ConditionInput } from '../../shared/kube/conditions.ts';
import { handlerRecorder } from '../../shared/kube/events.ts';
import type { Auth } from '../../shared/rediscluster/auth.ts';
import {
  type FailoverDecision,
  type FailoverResult,
  failOver,
  failoverPorts,
} from '../../shared/rediscluster/failover.ts';
import { listPods, readAuth } from '../../shared/rediscluster/kube.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import { type Instance, probeInstances } from '../../shared/rediscluster/probe.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { backupFreshness } from './freshness.ts';
import { askForPasswordRotation } from './password-drift.ts';
import { lookAtMarkedRestore } from './restore-look.ts';

/** Probes answer within this, or count as unreachable: a tick must not wait on a dead host. */
const PROBE_TIMEOUT_MS = 1000;

/** What health does to the outside world (Kubernetes, the Redis servers, the bus): a test fakes it. */
export type HealthPorts = {
  /** The cluster's passwords; never creates the generated Secret (reconcile's to do). */
  readAuth: (rc: RedisCluster) => Promise<Auth>;
  /** Asks reconcile to roll a new password, if the Secret holds one (a CloudEvent). */
  askForPasswordRotation: (rc: RedisCluster, auth: Auth, source: string) => Promise<boolean>;
  /** Runs the Restore the cluster's Restoring condition names, if any (a CloudEvent; restore-look.ts). */
  lookAtMarkedRestore: (rc: RedisCluster, source: string) => Promise<string | undefined>;
  /** The cluster's own pods. */
  listPods: (rc: RedisCluster) => Promise<V1Pod[]>;
  /** INFO of every pod, each bounded by a short timeout. */
  probeInstances: (
    cluster: string,
    pods: readonly V1Pod[],
    passwords: readonly string[],
  ) => Promise<Instance[]>;
  /** Promotes decision.to in place of a lost master (shared/rediscluster/failover.ts). */
  failOver: (o: {
    cluster: LoadedCluster;
    instances: readonly Instance[];
    password: string;
    decision: FailoverDecision;
    now: Date;
    source: string;
  }) => Promise<FailoverResult>;
  /** status.lastBackup and the BackupStale condition (reads Backups, sets metrics). */
  backupFreshness: (
    rc: RedisCluster,
    now: Date,
  ) => Promise<{ lastBackup?: { name: string; completedAt: string }; condition?: ConditionInput }>;
};

export const realPorts = (ctx: HandlerContext): HealthPorts => ({
  readAuth: (rc) => readAuth(ctx.kube, rc, false),
  askForPasswordRotation: (rc, auth, source) => askForPasswordRotation(ctx, rc, auth, source),
  lookAtMarkedRestore: (rc, source) => lookAtMarkedRestore(ctx, rc, source),
  listPods: (rc) => listPods(ctx.kube, rc),
  probeInstances: (cluster, pods, passwords) => probeInstances(cluster, pods, passwords, PROBE_TIMEOUT_MS),
  failOver: (o) =>
    failOver({
      ...o,
      ports: failoverPorts(ctx.kube),
      log: ctx.log,
      recorder: handlerRecorder(ctx, 'health'),
      publisher: ctx.publisher,
      fence: ctx.fence,
    }),
  backupFreshness: (rc, now) => backupFreshness(ctx, rc, now),
});
