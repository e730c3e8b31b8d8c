import { RedisClusterSpecDefaults } from '../../shared/api/generated.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { passwordsOf } from '../../shared/rediscluster/auth.ts';
import { hasFinalizer } from '../../shared/rediscluster/finalizer.ts';
import { assessHealth, type OutageWatch } from '../../shared/rediscluster/health.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import { observe } from '../../shared/rediscluster/observed.ts';
import { recordHistory } from '../../shared/rediscluster/promotion.ts';
import { restoringNow } from '../../shared/rediscluster/restoring.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import type { HealthPorts } from './ports.ts';

export type RunHealthOptions = {
  /** The triggering event's source, for the CloudEvents this run publishes. */
  source: string;
  /** The failover clock; this process's own unless a test brings one. */
  outages?: OutageWatch;
};

/**
 * One health run on a loaded cluster: probe every instance, fail over when the master has been
 * lost for spec.failover.after, write status.nodes and the Healthy and Ready conditions.
 */
export const runHealth = async (
  loaded: LoadedCluster,
  ctx: Pick<HandlerContext, 'clock' | 'fence'>,
  ports: HealthPorts,
  options: RunHealthOptions,
): Promise<Outcome> => {
  const { rc, writeStatus } = loaded;
  // Creation and deletion are reconcile's: there is no master to watch over yet, or any more.
  if (rc.metadata.deletionTimestamp || !hasFinalizer(rc) || !rc.status?.master) return done;

  const auth = await ports.readAuth(rc);
  await ports.askForPasswordRotation(rc, auth, options.source);
  // Every instance accepts the recorded password; one restarted with a stale file, an older one.
  const passwords = passwordsOf(auth);
  const password = auth.applied;
  const pods = await ports.listPods(rc);
  let instances = await ports.probeInstances(rc.metadata.name, pods, passwords);
  const now = ctx.clock();
  const assessed = assessHealth(rc, instances, now, options.outages);
  // A restore loading into the master (the master follows its feed for a while): never a failover.
  const restoring = restoringNow(rc, now);
  const a = restoring && assessed.failover ? { ...assessed, failover: undefined } : assessed;
  let master = rc.status.master;

  if (a.failover) {
    const result = await ports.failOver({
      cluster: loaded,
      instances,
      password,
      decision: a.failover,
      now,
      source: options.source,
    });
    // Lost the compare-and-set: the record moved on; assess again from the new one.
    if (!result.done) return retryAfter(200, 'MasterChanged');
    master = a.failover.to;
    instances = await ports.probeInstances(rc.metadata.name, await ports.listPods(rc), passwords);
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
  const fresh = await ports.backupFreshness(rc, now);
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
  // After the status is written: a look the bus refuses retries this run, never holds the status back.
  await ports.lookAtMarkedRestore(rc, options.source);
  if (a.failover) return retryAfter(1000, 'FailedOver'); // see the new topology settle
  return a.recheckMs ? retryAfter(a.recheckMs, 'MasterUnreachable') : done;
};
