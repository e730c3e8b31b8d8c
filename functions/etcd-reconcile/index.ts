import { CoreV1Api } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { type EtcdCluster, zEtcdCluster } from '../../shared/api/generated.ts';
import { addFinalizer, hasFinalizer } from '../../shared/engines/finalizer.ts';
import { isOutcome, loadObject } from '../../shared/engines/load.ts';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { EtcdError, EtcdReason } from '../../shared/etcd/errors.ts';
import { memberIdToHex } from '../../shared/etcd/ids.ts';
import {
  pdbFor,
  podFor,
  pvcFor,
  RESTORE_STEPS,
  type RestoreFrom,
  servicesFor,
} from '../../shared/etcdcluster/desired.ts';
import { finalize } from '../../shared/etcdcluster/finalize.ts';
import { createIfAbsent, deleteExactly } from '../../shared/etcdcluster/kube.ts';
import { FIELD_MANAGER, namesOf, OWNER_UID } from '../../shared/etcdcluster/names.ts';
import { observe, type Seen } from '../../shared/etcdcluster/observe.ts';
import { planStep, type Step } from '../../shared/etcdcluster/plan.ts';
import { requeueAfterMs } from '../../shared/etcdcluster/requeue.ts';
import { restoredOf, restoreFailureOf } from '../../shared/etcdcluster/restore/progress.ts';
import { healthOf, lagsOf, statusFrom } from '../../shared/etcdcluster/status.ts';
import { ensureTls } from '../../shared/etcdcluster/tls/ensure.ts';
import { DEFAULT_CLUSTER_DOMAIN } from '../../shared/etcdcluster/tls/sans.ts';
import { kubeSecretStore } from '../../shared/etcdcluster/tls/store.ts';
import { EventType } from '../../shared/events/types.ts';
import { applyOwnedObjects } from '../../shared/kube/apply-owned.ts';
import { type Condition, setCondition } from '../../shared/kube/conditions.ts';
import { handlerRecorder } from '../../shared/kube/events.ts';
import { controlledBy } from '../../shared/kube/ownership.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { type Defragmented, defragmentNext, withDefragmented } from './defragment.ts';
import { fromBackupOf, restoredVolumeUid } from './from-backup.ts';

type Status = NonNullable<EtcdCluster['status']>;

/** Steps one run takes at most before it lets the next event (or tick) go on. */
const MAX_STEPS = 12;

/**
 * etcd-reconcile: makes an EtcdCluster's members match its spec, one member at a time — bootstrap
 * with the first members, add as a learner and promote once caught up, remove a non-leader, bring
 * back a member's pod on its volume, replace a member whose volume is gone, upgrade one member at
 * a time with the leader last — and writes down what it found. Level-triggered: every step is
 * planned from what is there now (shared/etcdcluster/plan.ts); running it twice changes nothing.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  const loaded = await loadObject(event, ctx, TIDEWAY_KINDS.EtcdCluster, zEtcdCluster);
  if (isOutcome(loaded)) return loaded;
  const { obj: c, regarding } = loaded;
  let cluster = c;
  /** Every status write, and the object as it is after it: the next observation plans from that. */
  const writeStatus: typeof loaded.writeStatus = async (mutate) => {
    const written = await loaded.writeStatus(mutate);
    if (written) cluster = written;
    return written;
  };
  const generation = c.metadata.generation;

  if (c.metadata.deletionTimestamp) {
    if (c.status?.phase !== 'Deleting') await writeStatus((s) => ({ ...s, phase: 'Deleting' }));
    return (await finalize(ctx.kube, c, ctx.fence)) ? done : retryAfter(1000, 'WaitingForPods');
  }
  if (!hasFinalizer(c)) {
    await addFinalizer(ctx.kube, TIDEWAY_KINDS.EtcdCluster, c);
    return done; // the update is an event of its own
  }

  const condition = (s: Status, cond: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>) =>
    setCondition(s.conditions as Condition[] | undefined, cond, generation);
  const refusal = await applyOwnedObjects({
    kube: ctx.kube,
    fieldManager: FIELD_MANAGER,
    ownerUid: c.metadata.uid ?? '',
    objects: [...servicesFor(c), pdbFor(c)],
    fence: ctx.fence,
  });
  if (refusal) {
    await writeStatus((s) => ({
      ...s,
      conditions: condition(s, { type: 'Reconciled', status: 'False', ...refusal }),
    }));
    ctx.log.warn('not reconciled', refusal);
    return done;
  }

  const core = ctx.kube.makeApiClient(CoreV1Api);
  const recorder = handlerRecorder(ctx, 'etcd-reconcile');

  // With spec.tls: the Secrets members mount are there and sound before any pod needs them.
  const tls = cluster.spec.tls
    ? await ensureTls(kubeSecretStore(ctx.kube, cluster, ctx.fence), cluster, {
        now: ctx.clock(),
        domain: ctx.env.TIDEWAY_CLUSTER_DOMAIN || DEFAULT_CLUSTER_DOMAIN,
      })
    : undefined;
  for (const note of tls && 'notes' in tls ? tls.notes : [])
    await recorder.record({
      regarding,
      type: note.warning ? 'Warning' : 'Normal',
      reason: note.reason,
      action: 'tls',
      note: note.message,
    });
  if (tls && !('client' in tls)) {
    // Before the cluster formed nothing starts without it; after, running members keep what they
    // have, and nothing changes until it is fixed. Tideway then neither sees nor repairs the
    // members: Ready and Healthy say so rather than keep what an earlier run saw.
    const formed = !!cluster.status?.clusterID;
    const blind = `Tideway does not check or repair the members until this is fixed: ${tls.message}`;
    ctx.fence();
    await writeStatus((s) => {
      const next = formed ? s : { ...s, phase: 'Pending' as const };
      const { reason } = tls;
      const conditions = formed
        ? [
            { type: 'Reconciled', status: 'False' as const, reason, message: tls.message },
            { type: 'Healthy', status: 'Unknown' as const, reason, message: blind },
            { type: 'Ready', status: 'Unknown' as const, reason, message: blind },
          ]
        : [{ type: 'Ready', status: 'False' as const, reason, message: tls.message }];
      let out: Status = { ...next, observedGeneration: generation };
      for (const c of conditions) out = { ...out, conditions: condition(out, c) };
      return out;
    });
    ctx.log.warn('TLS not ready', { reason: tls.reason });
    return tls.retry ? retryAfter(10_000, tls.reason) : done;
  }
  const clientTls = tls?.client;
  // The CAs members will load, recorded before the first of them starts: never changed after.
  if (tls && !cluster.status?.tls?.trustedCAs) {
    ctx.fence();
    await writeStatus((s) => ({ ...s, tls: { ...s.tls, trustedCAs: tls.trust } }));
  }

  // A cluster made from a backup: what its first member starts from, checked before any pod exists.
  const fromBackupName = cluster.spec.bootstrap?.fromBackup?.name;
  const fromBackup = await fromBackupOf(cluster, ctx);
  // Once the data is in the first member's volume, a Backup gone since (pruned by retention) is
  // no reason to stop: only a member that must restore again (its volume lost) waits for it.
  const problem = fromBackup && 'reason' in fromBackup ? fromBackup : undefined;
  if (problem && !cluster.status?.bootstrap?.restoredAt) {
    const backup = fromBackupName ?? '';
    ctx.fence();
    await writeStatus((s) => {
      const next = {
        ...s,
        phase: 'Pending' as const,
        bootstrap: { ...s.bootstrap, backup, reason: problem.reason, message: problem.message },
        observedGeneration: generation,
      };
      return {
        ...next,
        conditions: condition(next, {
          type: 'Ready',
          status: 'False',
          reason: problem.reason,
          message: problem.message,
        }),
      };
    });
    ctx.log.warn('not bootstrapping from the backup', { reason: problem.reason });
    return problem.retry ? retryAfter(10_000, problem.reason) : done;
  }
  const restore = fromBackup && !('reason' in fromBackup) ? fromBackup : undefined;
  // The Backup checked first is the one this cluster starts from (BackupReplaced otherwise).
  if (restore && !cluster.status?.bootstrap?.backupUid) {
    ctx.fence();
    await writeStatus((s) => ({
      ...s,
      bootstrap: { ...s.bootstrap, ...restoreStatus(restore), backupUid: restore.backupUid },
    }));
  }
  let seen: Seen | undefined;
  let step: Step = { kind: 'converged' };
  let client: EtcdClient | undefined;
  let previous: Step | undefined;
  let defragmented: Defragmented | undefined;
  try {
    for (let i = 0; i < MAX_STEPS; i++) {
      client?.close();
      const o = await observe(ctx.kube, cluster, ctx.signal, clientTls);
      client = o.client;
      seen = o;
      // The cluster formed: from now on members join it, never bootstrap another.
      if (!cluster.status?.clusterID && o.clusterId && o.observed.members) {
        const clusterID = memberIdToHex(o.clusterId);
        // Made from a backup: its data is in, and never loaded again.
        const at = ctx.clock().toISOString();
        await writeStatus((s) => ({
          ...s,
          clusterID,
          ...(fromBackupName ? { bootstrap: { ...s.bootstrap, completedAt: at } } : {}),
        }));
        if (fromBackupName)
          await recorder.record({
            regarding,
            type: 'Normal',
            reason: 'Restored',
            action: 'bootstrap',
            note: `started from backup ${fromBackupName}${cluster.status?.bootstrap?.location ? ` (${cluster.status.bootstrap.location})` : ''}`,
          });
        continue;
      }
      // The pod that carries the restore steps (the first member's, made to start from the backup).
      const first = o.pods.find(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          (p.spec?.initContainers ?? []).some((x) => x.name === RESTORE_STEPS.restore),
      );
      const restored = fromBackupName ? restoredOf(first) : undefined;
      if (restored && first?.metadata?.name) {
        const member = first.metadata.name;
        // The snapshot is in that volume (restored now, or found there by steps that ran again):
        // from now on a pod on it starts without the steps. Every such volume until the cluster
        // formed, not only the first: one lost is restored again into a new claim, which a pod
        // made again would otherwise restore once more, be refused, and be deleted, for ever. The
        // claim is the pod's: Kubernetes keeps a claim that a pod uses until the pod is gone.
        const b = cluster.status?.bootstrap;
        if (!b?.restoredAt || !cluster.status?.clusterID) {
          const volume = await restoredVolumeUid(
            core,
            namesOf(cluster).namespace,
            namesOf(cluster).pvc(member),
          );
          if (!b?.restoredAt || volume !== b.restoredVolume) {
            const at = ctx.clock().toISOString();
            ctx.fence();
            await writeStatus((s) => ({
              ...s,
              bootstrap: { ...s.bootstrap, restoredAt: at, restoredVolume: volume },
            }));
          }
        }
        // Steps that ran again on a volume they restored (the pod re-created, or its sandbox
        // restarted, before or after the cluster formed) refuse it: that pod is replaced by one
        // without them, on the same volume.
        if (restored === 'restoredBefore') {
          ctx.fence();
          await deleteExactly(() =>
            core.deleteNamespacedPod({
              namespace: namesOf(cluster).namespace,
              name: member,
              body: { preconditions: { uid: first.metadata?.uid ?? '' } },
            }),
          );
          ctx.log.info('restarting a member without its restore steps: its volume holds the data', {
            member,
          });
          continue;
        }
        if (!cluster.status?.bootstrap?.restoredAt) continue;
      }
      step = planStep(o.observed);
      // The first member of a cluster made from a backup not starting: say why (its restore steps).
      if (fromBackupName && step.kind === 'wait' && step.reason === 'Bootstrapping') {
        const failed = restoreFailureOf(first);
        if (failed)
          step = {
            kind: 'wait',
            reason: 'RestoreFailed',
            message: `${failed.step} of ${o.observed.bootstrapMembers[0]}: ${failed.message}`,
          };
      }
      if (step.kind === 'wait' || step.kind === 'converged') break;
      // The same step again right after doing it: it changed nothing (an outside object in the way,
      // an answer not yet visible). Waiting beats repeating it at the step pace.
      if (previous && sameStep(previous, step)) {
        step = {
          kind: 'wait',
          reason: 'NoProgress',
          message: `${describeStep(step)} changed nothing; trying again later`,
        };
        break;
      }
      previous = step;
      ctx.fence();
      const note = await act(step, { cluster, client, ctx, core, writeStatus, restore, problem });
      if (note) {
        ctx.log.info(note.message, { step: step.kind });
        await recorder.record({
          regarding,
          // A conflict waits for a person: say it as a warning.
          type: note.reason.endsWith('Conflict') ? 'Warning' : 'Normal',
          reason: note.reason,
          action: step.kind,
          note: note.message,
        });
      }
      if (note?.wait) {
        step = { kind: 'wait', reason: note.reason, message: note.message };
        break;
      }
    }
    // Maintenance only in a run that found the cluster as specified and changed nothing.
    if (seen && client && step.kind === 'converged' && !previous) {
      const { lagging } = lagsOf(seen, cluster.status?.members, ctx.clock());
      defragmented = await defragmentNext({
        cluster,
        seen,
        client,
        ready: healthOf(seen, lagging).status === 'True',
        ctx,
        recorder,
        regarding,
      });
    }
  } finally {
    client?.close();
  }

  const final = step;
  if (seen) {
    const view = seen;
    await writeStatus((s) => {
      ctx.fence();
      const ready: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'> =
        final.kind === 'converged'
          ? { type: 'Ready', status: 'True', reason: 'Ready', message: `${view.observed.size} members serve` }
          : {
              type: 'Ready',
              status: 'False',
              reason: final.kind === 'wait' ? final.reason : 'Reconciling',
              message: final.kind === 'wait' ? final.message : `next: ${final.kind}`,
            };
      const lags = lagsOf(view, s.members, ctx.clock());
      let next = withDefragmented(statusFrom(cluster, s, view, final, lags.members), defragmented);
      // While the first member starts from the backup: which one, and how it goes.
      if (restore && !next.clusterID)
        next = {
          ...next,
          bootstrap: {
            ...next.bootstrap,
            ...restoreStatus(restore),
            ...(final.kind === 'wait' ? { reason: final.reason, message: final.message } : {}),
          },
        };
      for (const cond of [
        { type: 'Reconciled', status: 'True' as const, reason: 'Reconciled', message: '' },
        { type: 'Healthy', ...healthOf(view, lags.lagging) },
        ready,
      ])
        next = { ...next, conditions: condition(next, cond) };
      if (tls && 'expiresAt' in tls)
        next = { ...next, tls: { ...next.tls, expiresAt: tls.expiresAt.toISOString() } };
      return { ...next, observedGeneration: generation };
    });
  }
  // One member per run: the next is defragmented once a run has seen the cluster healthy again.
  const after = defragmented?.member
    ? requeueAfterMs({ kind: 'wait', reason: 'Defragmenting', message: '' }, 1)
    : requeueAfterMs(final, ctx.attempt, event.type === EventType.healthTick);
  return after === undefined
    ? done
    : retryAfter(
        after,
        defragmented?.member ? 'Defragmenting' : final.kind === 'wait' ? final.reason : 'Reconciling',
      );
};

const sameStep = (a: Step, b: Step) => JSON.stringify(a) === JSON.stringify(b);

const describeStep = (step: Step) => ('member' in step ? `${step.kind} ${step.member}` : step.kind);

type ActDeps = {
  cluster: EtcdCluster;
  client: EtcdClient | undefined;
  ctx: HandlerContext;
  core: CoreV1Api;
  writeStatus: (mutate: (s: Status) => Status | undefined) => Promise<EtcdCluster | undefined>;
  /** The first member of a cluster made from a backup starts from it. */
  restore: RestoreFrom | undefined;
  /** Why the backup cannot serve now (it was restored already; only a lost volume needs it). */
  problem: { reason: string; message: string } | undefined;
};

const locationOf = (r: RestoreFrom) => `s3://${r.source.store.s3.bucket}/${r.source.key}`;
const restoreStatus = (r: RestoreFrom) => ({ backup: r.source.backup, location: locationOf(r) });

/** Does one step; says what was done (for the log and an Event), or that the step must wait. */
const act = async (
  step: Step,
  d: ActDeps,
): Promise<{ reason: string; message: string; wait?: boolean } | undefined> => {
  const { cluster: c, ctx, core } = d;
  const n = namesOf(c);
  const namespace = n.namespace;
  const call = { signal: ctx.signal, timeoutMs: 10_000 };
  const etcd = () => {
    if (!d.client) throw new Error('no member pod to talk to');
    return d.client;
  };
  switch (step.kind) {
    case 'bootstrap':
      // The names first (compare-and-set on what is there), then the pods: a run that stops in
      // between finds them and makes the same members, never a second set.
      await d.writeStatus((s) => {
        if (s.members?.length) return undefined;
        return { ...s, phase: 'Creating', members: step.members.map((name) => ({ name })) };
      });
      return { reason: 'Bootstrapping', message: `bootstrapping ${step.members.join(', ')}` };
    case 'createMember': {
      const name = n.pvc(step.member);
      if (step.volume === 'new')
        await createIfAbsent(() =>
          core.createNamespacedPersistentVolumeClaim({ namespace, body: pvcFor(c, step.member) }),
        );
      // Only ever on this cluster's own volume: a namesake left by an earlier cluster, or one being
      // deleted, would start the member on someone else's data, or on none.
      const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace, name }).catch(() => undefined);
      if (
        !pvc ||
        pvc.metadata?.annotations?.[OWNER_UID] !== c.metadata.uid ||
        pvc.metadata?.deletionTimestamp
      )
        return {
          reason: 'VolumeConflict',
          message: `not starting ${step.member}: ${name} ${pvc ? 'is not this cluster’s (or is being deleted)' : 'is gone'}`,
          wait: true,
        };
      // Only a member of the cluster's first formation starts from the backup, and only on a volume
      // the backup was not restored into yet (a lost volume is restored again, never started empty).
      const fromBackup = step.join.state === 'new' && !!c.spec.bootstrap?.fromBackup;
      const restoredHere =
        !!c.status?.bootstrap?.restoredVolume && c.status.bootstrap.restoredVolume === pvc.metadata?.uid;
      if (fromBackup && !restoredHere && !d.restore)
        return {
          reason: d.problem?.reason ?? 'RestoreUnavailable',
          message: `not starting ${step.member} on a volume without the backup's data: ${d.problem?.message ?? 'the backup cannot be read'}`,
          wait: true,
        };
      ctx.fence();
      await createIfAbsent(() =>
        core.createNamespacedPod({
          namespace,
          body: podFor(c, step.member, step.join, fromBackup && !restoredHere ? d.restore : undefined),
        }),
      );
      // A namesake made by someone else is not our member: say so instead of "starting" it again.
      const pod = await core.readNamespacedPod({ namespace, name: step.member }).catch(() => undefined);
      if (pod && !controlledBy(pod, c.metadata.uid ?? ''))
        return {
          reason: 'PodConflict',
          message: `not starting ${step.member}: a pod of that name exists that is not this cluster's; Tideway neither uses nor deletes it — delete it, or rename the cluster`,
          wait: true,
        };
      return { reason: 'MemberStarted', message: `started ${step.member} (${step.join.state})` };
    }
    case 'addLearner': {
      try {
        await etcd().memberAdd([n.peerURL(step.member)], { ...call, isLearner: true });
      } catch (error) {
        // An earlier add that timed out may have gone through: the next run sees the member.
        if (error instanceof EtcdError && error.reason === EtcdReason.PeerURLExists) return undefined;
        if (error instanceof EtcdError && error.retry)
          return { reason: 'AddDeferred', message: `adding ${step.member}: ${error.message}`, wait: true };
        throw error;
      }
      return { reason: 'MemberAdded', message: `added ${step.member} as a learner` };
    }
    case 'promote':
      try {
        await etcd().memberPromote(step.id, call);
      } catch (error) {
        // An earlier promote that timed out went through.
        if (error instanceof EtcdError && error.reason === EtcdReason.MemberNotLearner) return undefined;
        if (error instanceof EtcdError && error.retry)
          return {
            reason: 'LearnerCatchingUp',
            message: `${step.member} is catching up: ${error.message}`,
            wait: true,
          };
        throw error;
      }
      return { reason: 'MemberPromoted', message: `promoted ${step.member} to a voting member` };
    case 'removeMember':
      try {
        await etcd().memberRemove(step.id, call);
      } catch (error) {
        if (error instanceof EtcdError && error.reason === EtcdReason.MemberNotFound) return undefined;
        if (error instanceof EtcdError && error.retry)
          return {
            reason: 'RemoveDeferred',
            message: `removing ${step.member}: ${error.message}`,
            wait: true,
          };
        throw error;
      }
      return {
        reason: step.reason === 'VolumeLost' ? 'MemberReplaced' : 'MemberRemoved',
        message:
          step.reason === 'VolumeLost'
            ? `removed ${step.member}: its volume is gone (a new member takes its place)`
            : `removed ${step.member} (scale down)`,
      };
    case 'moveLeader':
      await etcd().moveLeader(step.to, call);
      return { reason: 'LeaderMoved', message: `moved leadership to ${step.toMember}` };
    case 'deletePod': {
      const pod = await core.readNamespacedPod({ namespace, name: step.member }).catch(() => undefined);
      if (!pod?.metadata?.uid) return undefined;
      // Never one this cluster does not control (a namesake someone else made).
      if (!controlledBy(pod, c.metadata.uid ?? ''))
        return {
          reason: 'PodConflict',
          message: `not deleting ${step.member}: a pod of that name exists that is not this cluster's; Tideway neither uses nor deletes it — delete it, or rename the cluster`,
          wait: true,
        };
      await deleteExactly(() =>
        core.deleteNamespacedPod({
          namespace,
          name: step.member,
          body: { preconditions: { uid: pod.metadata?.uid ?? '' } },
        }),
      );
      return {
        reason:
          step.reason === 'Upgrade'
            ? 'MemberUpgrading'
            : step.reason === 'Rejoin'
              ? 'MemberRejoining'
              : 'PodDeleted',
        message:
          step.reason === 'Upgrade'
            ? `restarting ${step.member} on ${n.name}'s new pod template (image or resources)`
            : step.reason === 'Rejoin'
              ? `restarting ${step.member}: a member left before it first started, and etcd refuses the member list its pod was made with`
              : `deleted ${step.member}'s pod: it is no longer a member`,
        ...(step.reason === 'Upgrade' ? { wait: true } : {}),
      };
    }
    case 'deleteVolume': {
      const name = n.pvc(step.member);
      const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace, name }).catch(() => undefined);
      if (!pvc?.metadata?.uid) return undefined;
      await deleteExactly(() =>
        core.deleteNamespacedPersistentVolumeClaim({
          namespace,
          name,
          body: { preconditions: { uid: pvc.metadata?.uid ?? '' } },
        }),
      );
      return { reason: 'VolumeDeleted', message: `deleted ${name}: its member was removed` };
    }
    default:
      return undefined;
  }
};
