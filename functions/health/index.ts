import type { CloudEvent } from 'cloudevents';
import { RedisClusterSpecDefaults } from '../../shared/api/generated.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { handlerRecorder } from '../../shared/kube/events.ts';
import { passwordsOf } from '../../shared/rediscluster/auth.ts';
import { failOver } from '../../shared/rediscluster/failover.ts';
import { hasFinalizer } from '../../shared/rediscluster/finalizer.ts';
import { assessHealth } from '../../shared/rediscluster/health.ts';
import { listPods, readAuth } from '../../shared/rediscluster/kube.ts';
import { isOutcome, loadCluster } from '../../shared/rediscluster/load.ts';
import { observe } from '../../shared/rediscluster/observed.ts';
import { probeInstances } from '../../shared/rediscluster/probe.ts';
import { recordHistory } from '../../shared/rediscluster/promotion.ts';
import { restoringNow } from '../../shared/rediscluster/restoring.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { backupFreshness } from './freshness.ts';
import { askForPasswordRotation } from './password-drift.ts';

/** Probes answer within this, or count as unreachable: a tick must not wait on a dead host. */
const PROBE_TIMEOUT_MS = 1000;

/**
 * health: on the watcher's health ticks (and on changes of the cluster's pods, to notice a lost
 * master at once), probes every instance, writes status.nodes and the Healthy and Ready
 * conditions, and fails over when the master has been unreachable for spec.failover.after.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const loaded = await loadCluster(event, ctx);
  if (isOutcome(loaded)) return loaded;
  const { rc, writeStatus } = loaded;
  // Creation and deletion are reconcile's: there is no master to watch over yet, or any more.
  if (rc.metadata.deletionTimestamp || !hasFinalizer(rc) || !rc.status?.master) return done;

  const auth = await readAuth(ctx.kube, rc, false);
  await askForPasswordRotation(ctx, rc, auth, event.source);
  // Every instance accepts the recorded password; one restarted with a stale file, an older one.
  const passwords = passwordsOf(auth);
  const password = auth.applied;
  const pods = await listPods(ctx.kube, rc);
  let instances = await probeInstances(rc.metadata.name, pods, passwords, PROBE_TIMEOUT_MS);
  const now = ctx.clock();
  const assessed = assessHealth(rc, instances, now);
  // A restore loading into the master (the master follows its feed for a while): never a failover.
  const restoring = restoringNow(rc, now);
  const a = restoring && assessed.failover ? { ...assessed, failover: undefined } : assessed;
  let master = rc.status.master;

  if (a.failover) {
    const result = await failOver({
      kube: ctx.kube,
      cluster: loaded,
      instances,
      password,
      decision: a.failover,
      now,
      log: ctx.log,
      recorder: handlerRecorder(ctx, 'health'),
      publisher: ctx.publisher,
      source: event.source,
      fence: ctx.fence,
    });
    // Lost the compare-and-set: the record moved on; assess again from the new one.
    if (!result.done) return retryAfter(200, 'MasterChanged');
    master = a.failover.to;
    instances = await probeInstances(
      rc.metadata.name,
      await listPods(ctx.kube, rc),
      passwords,
      PROBE_TIMEOUT_MS,
    );
  }

  const o = observe(rc, instances, master, pods);
  // The history the serving master holds: only a replica of it may be promoted next time.
  const served = instances.find((i) => i.pod === master)?.replication;
  const history = served?.role === 'master' ? served : undefined;
  const healthy = a.failover
    ? {
        type: 'Healthy',
        status: 'False' as const,
        reason: 'FailedOver',
        message: `master ${a.failover.from} was ${a.failover.reason === 'MasterBehind' ? 'behind a replica' : 'unreachable'} for ${rc.spec.failover?.after ?? RedisClusterSpecDefaults.failover.after}; ${a.failover.to} promoted`,
      }
    : restoring && assessed.failover
      ? {
          type: 'Healthy',
          status: 'False' as const,
          reason: 'Restoring',
          message: `no failover while a restore runs (${restoring}); ${assessed.healthy.message}`,
        }
      : a.healthy;
  const fresh = await backupFreshness(ctx, rc, now);
  await writeStatus((s) => {
    // Never write over a master someone else recorded meanwhile (a switchover by reconcile).
    if ((s.master ?? undefined) !== master) return undefined;
    ctx.fence();
    let conditions = s.conditions as Condition[] | undefined;
    for (const c of [...o.conditions, healthy, ...(fresh.condition ? [fresh.condition] : [])])
      conditions = setCondition(conditions, c, rc.metadata.generation);
    const { conditions: _c, ...rest } = o;
    const { failover: previous, ...others } = s;
    const failover = { ...previous };
    if (a.failover || !a.masterUnreachableSince) delete failover.masterUnreachableSince;
    else failover.masterUnreachableSince = a.masterUnreachableSince;
    return {
      ...others,
      ...rest,
      conditions,
      ...(history ? { replication: recordHistory(s.replication, history) } : {}),
      ...(Object.keys(failover).length ? { failover } : {}),
      ...(fresh.lastBackup ? { lastBackup: fresh.lastBackup } : {}),
    };
  });
  if (a.failover) return retryAfter(1000, 'FailedOver'); // see the new topology settle
  return a.recheckMs ? retryAfter(a.recheckMs, 'MasterUnreachable') : done;
};
