import { type RedisCluster, RedisClusterSpecDefaults } from '../../shared/api/generated.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { OwnershipConflict } from '../../shared/kube/ownership.ts';
import { specProblems } from '../../shared/rediscluster/admission.ts';
import { type Auth, passwordsOf } from '../../shared/rediscluster/auth.ts';
import { bootstrapPending } from '../../shared/rediscluster/bootstrap.ts';
import { statefulSetReplicas } from '../../shared/rediscluster/desired.ts';
import { hasFinalizer } from '../../shared/rediscluster/finalizer.ts';
import { splitPods } from '../../shared/rediscluster/kube.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import { ordinalOf } from '../../shared/rediscluster/names.ts';
import { allInSync, observe } from '../../shared/rediscluster/observed.ts';
import { type Command, planTopology } from '../../shared/rediscluster/plan.ts';
import { podReady } from '../../shared/rediscluster/probe.ts';
import { recordHistory } from '../../shared/rediscluster/promotion.ts';
import { planQuorum } from '../../shared/rediscluster/quorum.ts';
import { writeQuorum } from '../../shared/rediscluster/redis-conf.ts';
import { restoringNow } from '../../shared/rediscluster/restoring.ts';
import { planRollout, type RolloutStep } from '../../shared/rediscluster/rollout.ts';
import { switchoverTarget } from '../../shared/rediscluster/switchover.ts';
import {
  done,
  type HandlerContext,
  LockLostError,
  type Outcome,
  retryAfter,
  TemporaryError,
} from '../../shared/runtime/handler.ts';
import type { ReconcilePorts } from './ports.ts';

type Status = NonNullable<RedisCluster['status']>;

const masterChanged = () =>
  new TemporaryError('MasterChanged', 'status.master changed meanwhile; looking again', 200);

/**
 * One reconcile run on a loaded cluster: owned objects by server-side apply, the replication
 * topology over the network at pod IPs, role labels the Services follow, at most one disruptive
 * step (switchover, pod restart), and what it found written down.
 */
export const runReconcile = async (
  loaded: LoadedCluster,
  ctx: Pick<HandlerContext, 'clock' | 'fence' | 'log'>,
  ports: ReconcilePorts,
): Promise<Outcome> => {
  const { rc, key, regarding, writeStatus } = loaded;
  const generation = rc.metadata.generation;

  if (rc.metadata.deletionTimestamp) {
    if (rc.status?.phase !== 'Deleting') await writeStatus((s) => ({ ...s, phase: 'Deleting' }));
    return (await ports.finalize(rc)) ? done : retryAfter(1000, 'WaitingForPods');
  }
  if (!hasFinalizer(rc)) {
    await ports.addFinalizer(rc);
    return done; // the update is an event of its own: the next run sees the finalizer
  }

  const recordedMaster = rc.status?.master;
  let expectedMaster = recordedMaster;
  /** Status writes never change status.master behind another writer's back (compare-and-set). */
  const writeOwnStatus = (mutate: (s: Status) => Status | undefined) =>
    writeStatus((s) => {
      if ((s.master ?? undefined) !== expectedMaster) throw masterChanged();
      ctx.fence();
      return mutate(s);
    });
  const refuse = async (r: { reason: string; message: string }) => {
    // Nothing running is touched because of a bad edit or a conflict: report it, wait for a change.
    await writeOwnStatus((s) => ({
      ...s,
      conditions: setCondition(
        s.conditions as Condition[],
        { type: 'Reconciled', status: 'False', ...r },
        generation,
      ),
    }));
    ctx.log.warn('not reconciled', r);
    return done;
  };

  // What admission refuses is refused here too (objects created before a rule existed, or an API
  // server without the current CRD): nothing running changes because of it.
  const problems = specProblems(rc);
  if (problems.length > 0) return refuse({ reason: 'InvalidSpec', message: problems.join('; ') });

  let auth: Auth;
  try {
    auth = await ports.readAuth(rc);
  } catch (error) {
    if (error instanceof OwnershipConflict) return refuse({ reason: error.reason, message: error.message });
    throw error;
  }
  const desired = rc.spec.replicas ?? RedisClusterSpecDefaults.replicas;
  const masterOrdinal = recordedMaster ? ordinalOf(rc.metadata.name, recordedMaster) : -1;
  const labelled = await ports.listLabelledPods(rc);
  // Lost as health records it, or as its pod already says (gone, terminating, not Ready): this run
  // may come, on that pod's event, before health has written the outage down, and a scale-down
  // now could remove the one replica to promote.
  const ownPods = splitPods(rc, labelled).pods;
  const masterPod = ownPods.find((p) => p.metadata?.name === recordedMaster);
  const masterLost =
    Boolean(rc.status?.failover?.masterUnreachableSince) ||
    (recordedMaster !== undefined &&
      (!masterPod || !!masterPod.metadata?.deletionTimestamp || !podReady(masterPod)));
  const passwords = passwordsOf(auth);
  /** The quorum for a StatefulSet of `replicas`: its real size, not the spec's, until it shrinks. */
  const quorumFor = (replicas: number) => writeQuorum(rc.spec.config ?? {}, replicas);
  /** Runs commands in order; after one fails, the later ones for that pod are not sent. */
  const send = async (commands: readonly Command[], password: (c: Command) => string) => {
    const failed = new Set<string>();
    for (const c of commands) {
      if (failed.has(c.pod)) continue;
      try {
        ctx.fence();
        await ports.command(c.ip, password(c), c.args);
        ctx.log.info('topology', { pod: c.pod, command: c.args.join(' ') });
      } catch (error) {
        if (error instanceof LockLostError) throw error;
        failed.add(c.pod);
        ctx.log.warn('topology command failed', { pod: c.pod, command: c.args[0], error });
      }
    }
    return failed;
  };
  const applied = await ports.applyOwned({
    rc,
    auth: { password: auth.applied, ...(auth.previous === undefined ? {} : { previous: auth.previous }) },
    pods: ownPods,
    stsReplicas: (current) => statefulSetReplicas({ desired, masterOrdinal, masterLost, current }),
    // The master takes a lower write quorum before the StatefulSet removes replicas, or it
    // refuses writes (NOREPLICAS) from the moment their connections close.
    beforeScaleDown: async (stsUid, replicas) => {
      const master = splitPods(rc, labelled, stsUid).pods.find((p) => p.metadata?.name === recordedMaster);
      // No master to lower: statefulSetReplicas keeps the size while it is lost.
      if (!master || masterLost) return true;
      const probed = await ports.probeInstances(rc.metadata.name, [master], passwords, {
        inspectQuorum: true,
      });
      const q = planQuorum(probed, quorumFor(replicas));
      // Not answering, or its quorum unread: not known to take writes without the replicas.
      if (!probed[0]?.replication || q.unknown.length > 0) return false;
      const failed = await send(q.commands, () => passwords[probed[0]?.password ?? 0] ?? auth.applied);
      return failed.size === 0;
    },
  });
  if (!('sts' in applied)) return refuse(applied);
  const { sts } = applied;
  const stsReplicas = sts.spec?.replicas ?? desired;

  // One list for the run: what the configuration keys are kept for, and what is probed.
  const { pods, foreign } = splitPods(rc, labelled, sts.metadata?.uid);
  const instances = await ports.probeInstances(rc.metadata.name, pods, passwords, {
    inspectAuth: true,
    inspectQuorum: true,
  });
  const rotation = await ports.rollPassword({ rc, auth, instances, regarding });
  const password = rotation.password;
  const plan = planTopology(instances, recordedMaster, desired, rc.status?.replication);
  if (plan.master !== recordedMaster) {
    // The record first (compare-and-set), then the servers: two deciders never both act.
    const written = await writeOwnStatus((s) => ({ ...s, master: plan.master }));
    if (written?.status?.master !== plan.master) throw masterChanged();
    expectedMaster = plan.master;
  }
  // The quorum first: a server promoted by these commands takes writes on its terms from the
  // first. One whose quorum could not be read gets no role this run.
  const quorumPlan = planQuorum(instances, quorumFor(stsReplicas));
  const withheld = plan.commands.filter((c) => quorumPlan.unknown.includes(c.pod));
  const commands = [
    ...quorumPlan.commands,
    ...plan.commands.filter((c) => !quorumPlan.unknown.includes(c.pod)),
  ];
  const converged =
    commands.length === 0 && !quorumPlan.waiting && plan.labels.length === 0 && plan.blocked.length === 0;
  const failed = await send(commands, () => password);
  for (const c of withheld) failed.add(c.pod);
  for (const l of plan.labels) {
    // An instance whose command failed is not known to play its part: no label for it.
    ctx.fence();
    await ports.labelPod(key.namespace, l.pod, failed.has(l.pod) ? null : l.role);
  }
  if (plan.change?.reason === 'Adopted') {
    await ports.recordEvent({
      regarding,
      type: 'Warning',
      reason: 'Adopted',
      action: 'Switchover',
      note: `master ${plan.change.from ?? '(none)'} → ${plan.master}: adopted the running master`,
    });
  }

  const after =
    commands.length > 0
      ? // The commands change roles, not pods: probe the same pods again.
        await ports.probeInstances(rc.metadata.name, pods, passwords)
      : instances;
  const o = observe(rc, after, plan.master, pods);
  const inSync = converged && allInSync(rc, o);
  const m = after.find((i) => i.pod === plan.master);

  // At most one disruptive step per run, and only from a cluster in sync.
  let step: RolloutStep = { kind: 'none' };
  let progress: { status?: 'True' | 'False'; reason: string; message: string } = plan.blocked.length
    ? { reason: 'TopologyBlocked', message: plan.blocked.join('; ') }
    : rotation.waiting
      ? { reason: 'RotatingPassword', message: rotation.waiting }
      : quorumPlan.waiting
        ? { reason: 'WriteQuorum', message: quorumPlan.waiting }
        : { reason: 'Applied', message: 'owned objects match the spec' };
  const restoring = restoringNow(rc, ctx.clock());
  if (restoring) {
    // The master is being loaded: no restart, switchover or scale-down until it is done.
    step = { kind: 'wait', why: `a restore runs: ${restoring}` };
    progress = { reason: 'Restoring', message: step.why };
  } else if (stsReplicas > desired) {
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

  if (foreign.length > 0)
    // Not Tideway's to touch, but the cluster's Services send them traffic: say so.
    progress = {
      status: 'False',
      reason: 'ForeignPods',
      message: `pods ${foreign.map((p) => p.metadata?.name).join(', ')} carry this cluster's labels but are not its StatefulSet's; the cluster's Services send them traffic. Remove their labels or the pods`,
    };

  await writeOwnStatus((s) => {
    let conditions = s.conditions as Condition[] | undefined;
    for (const c of o.conditions) conditions = setCondition(conditions, c, generation);
    conditions = setCondition(conditions, { type: 'Reconciled', status: 'True', ...progress }, generation);
    const { conditions: _c, ...rest } = o;
    // A reinstated master starts a new id: record it with the one it continued from, so the
    // instances that come back with the earlier id are still known as holding this data.
    const served = after.find((i) => i.pod === plan.master)?.replication;
    const replication = served?.role === 'master' ? recordHistory(s.replication, served) : s.replication;
    return {
      ...s,
      ...rest,
      conditions,
      observedGeneration: generation,
      ...(replication ? { replication } : {}),
    };
  });

  // Created from a backup: its data first (the rollout and scaling steps wait for it).
  if (bootstrapPending(rc) && !rc.metadata.deletionTimestamp)
    return ports.advanceBootstrap({
      rc,
      masterServes: m?.replication?.role === 'master',
      writeStatus: writeOwnStatus,
      regarding,
    });

  if (step.kind === 'switchover') {
    await ports.switchover({
      cluster: loaded,
      instances: after,
      password,
      from: step.from,
      to: step.to,
      why: step.why,
    });
    return retryAfter(200, 'Switchover');
  }
  if (step.kind === 'deletePod') {
    const uid = pods.find((p) => p.metadata?.name === step.pod)?.metadata?.uid;
    ctx.fence();
    // That very pod (uid precondition): never one that replaced it meanwhile.
    await ports.deletePod(key.namespace, step.pod, uid);
    ctx.log.info('rolling update', { pod: step.pod, why: step.why });
    await ports.recordEvent({
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
  if (plan.blocked.length > 0) return retryAfter(2000, 'TopologyBlocked');
  if (rotation.waiting) return retryAfter(2000, 'RotatingPassword');
  // Their labels may go without an event that names this cluster: look again now and then.
  if (foreign.length > 0) return retryAfter(30_000, 'ForeignPods');
  return converged && o.phase === 'Ready' ? done : retryAfter(1000, 'Converging');
};
