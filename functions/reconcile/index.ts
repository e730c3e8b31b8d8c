import { CoreV1Api, EventsV1Api } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { serverSideApply } from '../../shared/kube/apply.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { eventRecorder } from '../../shared/kube/events.ts';
import {
  authConfSecretFor,
  configMapFor,
  hashOf,
  pdbFor,
  servicesFor,
  statefulSetFor,
} from '../../shared/rediscluster/desired.ts';
import { addFinalizer, finalize, hasFinalizer } from '../../shared/rediscluster/finalizer.ts';
import { labelPod, listPods, readPassword } from '../../shared/rediscluster/kube.ts';
import { isOutcome, loadCluster } from '../../shared/rediscluster/load.ts';
import { FIELD_MANAGER, ordinalOf } from '../../shared/rediscluster/names.ts';
import { observe } from '../../shared/rediscluster/observed.ts';
import { planTopology } from '../../shared/rediscluster/plan.ts';
import { onInstance, probeInstances } from '../../shared/rediscluster/probe.ts';
import { ConfigRejected } from '../../shared/rediscluster/redis-conf.ts';
import { planRollout, type RolloutStep } from '../../shared/rediscluster/rollout.ts';
import { switchover, switchoverTarget } from '../../shared/rediscluster/switchover.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';

/**
 * reconcile: makes a RedisCluster's world match its spec — owned objects by server-side apply,
 * the replication topology over the network at pod IPs, role labels the Services follow — and
 * writes down what it found. Level-triggered: the event only names the object; everything is
 * re-read, and running it twice changes nothing.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const loaded = await loadCluster(event, ctx);
  if (isOutcome(loaded)) return loaded;
  const { rc, key, regarding, writeStatus } = loaded;
  const generation = rc.metadata.generation;

  if (rc.metadata.deletionTimestamp) {
    if (rc.status?.phase !== 'Deleting') await writeStatus((s) => ({ ...s, phase: 'Deleting' }));
    return (await finalize(ctx.kube, rc)) ? done : retryAfter(1000, 'WaitingForPods');
  }
  if (!hasFinalizer(rc)) {
    await addFinalizer(ctx.kube, rc);
    return done; // the update is an event of its own: the next run sees the finalizer
  }

  const recorder = eventRecorder(
    ctx.kube.makeApiClient(EventsV1Api),
    'tideway.dev/reconcile',
    ctx.function,
    (error) => ctx.log.warn('event not recorded', { error }),
  );
  const apply = serverSideApply(ctx.kube, FIELD_MANAGER);

  const password = await readPassword(ctx.kube, rc, true);
  let configMap: ReturnType<typeof configMapFor>;
  try {
    configMap = configMapFor(rc);
  } catch (error) {
    if (!(error instanceof ConfigRejected)) throw error;
    // Nothing running is touched because of a bad edit: report it and wait for the next one.
    await writeStatus((s) => ({
      ...s,
      conditions: setCondition(
        s.conditions as Condition[],
        { type: 'Reconciled', status: 'False', reason: error.reason, message: error.message },
        generation,
      ),
    }));
    return done;
  }
  const authConf = authConfSecretFor(rc, password);
  await apply(configMap);
  await apply(authConf);
  const desired = rc.spec.replicas ?? 3;
  // Scaling down never takes the master away: the StatefulSet keeps it until it has handed over.
  const masterOrdinal = rc.status?.master ? ordinalOf(rc.metadata.name, rc.status.master) : -1;
  const stsReplicas = Math.max(desired, masterOrdinal + 1);
  const sts = await apply(
    statefulSetFor(
      rc,
      hashOf(`${configMap.data?.['redis.conf']}${authConf.data?.['auth.conf']}`),
      stsReplicas,
    ),
  );
  for (const svc of servicesFor(rc)) await apply(svc);
  await apply(pdbFor(rc));

  const pods = await listPods(ctx.kube, rc);
  const instances = await probeInstances(rc.metadata.name, pods, password);
  const plan = planTopology(instances, rc.status?.master);
  const converged = plan.commands.length === 0 && plan.labels.length === 0;
  const failed = new Set<string>();
  for (const c of plan.commands) {
    try {
      await onInstance(c.ip, password, (r) => r.command(...c.args));
      ctx.log.info('topology', { pod: c.pod, command: c.args.join(' ') });
    } catch (error) {
      failed.add(c.pod);
      ctx.log.warn('topology command failed', { pod: c.pod, command: c.args[0], error });
    }
  }
  for (const l of plan.labels) {
    // An instance whose command failed is not known to play its part: no label for it.
    await labelPod(ctx.kube, key.namespace, l.pod, failed.has(l.pod) ? null : l.role);
  }
  if (plan.change && plan.change.reason !== 'Initial') {
    await recorder.record({
      regarding,
      type: 'Warning',
      reason: plan.change.reason,
      action: 'Switchover',
      note: `master ${plan.change.from ?? '(none)'} → ${plan.master}: ${plan.change.reason === 'MasterBehind' ? 'the master came back with less data than a replica' : 'adopted the running master'}`,
    });
  }

  const after =
    plan.commands.length > 0
      ? await probeInstances(rc.metadata.name, await listPods(ctx.kube, rc), password)
      : instances;
  const o = observe(rc, after, plan.master, pods);
  const inSync = converged && o.phase === 'Ready' && o.nodes?.every((n) => n.ready) === true;
  const m = after.find((i) => i.pod === plan.master);

  // At most one disruptive step per run, and only from a cluster in sync.
  let step: RolloutStep = { kind: 'none' };
  let progress = { reason: 'Applied', message: 'owned objects match the spec' };
  if (stsReplicas > desired) {
    const to = m && inSync ? switchoverTarget(after, m, (i) => i.ordinal < desired) : undefined;
    const why = `scaling down to ${desired}: ${m?.pod} hands the master role over first`;
    step =
      m && to
        ? { kind: 'switchover', from: m, to, why }
        : { kind: 'wait', why: `${why}, once a replica is in sync` };
    progress = { reason: 'ScalingDown', message: step.why };
  } else {
    step = planRollout({ sts, pods, instances: after, master: plan.master, desired, inSync });
    if (step.kind !== 'none') progress = { reason: 'RollingUpdate', message: step.why };
  }

  await writeStatus((s) => {
    let conditions = s.conditions as Condition[] | undefined;
    for (const c of o.conditions) conditions = setCondition(conditions, c, generation);
    conditions = setCondition(conditions, { type: 'Reconciled', status: 'True', ...progress }, generation);
    const { conditions: _c, ...rest } = o;
    return { ...s, ...rest, conditions, observedGeneration: generation };
  });

  if (step.kind === 'switchover') {
    await switchover({
      kube: ctx.kube,
      cluster: loaded,
      instances: after,
      password,
      from: step.from,
      to: step.to,
      why: step.why,
      log: ctx.log,
      recorder,
    });
    return retryAfter(200, 'Switchover');
  }
  if (step.kind === 'deletePod') {
    await ctx.kube.makeApiClient(CoreV1Api).deleteNamespacedPod({ namespace: key.namespace, name: step.pod });
    ctx.log.info('rolling update', { pod: step.pod, why: step.why });
    await recorder.record({
      regarding,
      type: 'Normal',
      reason: 'RollingUpdate',
      action: 'DeletePod',
      note: step.why,
    });
    return retryAfter(1000, 'RollingUpdate');
  }
  if (step.kind === 'wait') return retryAfter(2000, progress.reason);
  // Not there yet (pods starting, a sync running): look again soon. Pod events also wake us.
  return converged && o.phase === 'Ready' ? done : retryAfter(1000, 'Converging');
};
