import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Instance } from './probe.ts';
import { switchoverTarget } from './switchover.ts';

export type RolloutStep =
  | { kind: 'none' }
  | { kind: 'wait'; why: string }
  | { kind: 'deletePod'; pod: string; why: string }
  | { kind: 'switchover'; from: Instance; to: Instance; why: string };

const REVISION = 'controller-revision-hash';

/**
 * The next step of a version or template change (the StatefulSet is OnDelete: Tideway decides
 * which pod restarts when). One step at a time and only from a cluster in sync: outdated replicas
 * first, highest ordinal first, each back and synced before the next; then one switchover to an
 * updated replica; then the old master, which comes back as a replica.
 */
export const planRollout = (o: {
  sts: V1StatefulSet;
  pods: readonly V1Pod[];
  instances: readonly Instance[];
  master: string | undefined;
  desired: number;
  /** Every instance plays its part and is in sync. */
  inSync: boolean;
}): RolloutStep => {
  const revision = o.sts.status?.updateRevision;
  if (!revision || (o.sts.status?.observedGeneration ?? 0) < (o.sts.metadata?.generation ?? 0))
    return { kind: 'wait', why: 'the StatefulSet controller has not seen the new template yet' };
  const current = new Set(
    o.pods.filter((p) => p.metadata?.labels?.[REVISION] === revision).map((p) => p.metadata?.name),
  );
  const outdated = o.instances
    .filter((i) => i.ordinal < o.desired && !current.has(i.pod))
    .sort((a, b) => b.ordinal - a.ordinal);
  if (outdated.length === 0) return { kind: 'none' };
  // A replica on an old template that does not serve (e.g. stuck on a bad image the user has
  // since corrected) loses nothing by restarting, and waiting for sync would wait forever.
  const stuck = outdated.find((i) => i.pod !== o.master && !i.podReady && !i.terminating);
  if (stuck)
    return {
      kind: 'deletePod',
      pod: stuck.pod,
      why: `replacing ${stuck.pod}, which is not serving, with the current template`,
    };
  if (!o.inSync)
    return { kind: 'wait', why: 'waiting for every instance to be in sync before the next restart' };
  const total = o.instances.filter((i) => i.ordinal < o.desired).length;
  const progress = `${total - outdated.length}/${total} updated`;
  const replica = outdated.find((i) => i.pod !== o.master);
  if (replica)
    return { kind: 'deletePod', pod: replica.pod, why: `restarting replica ${replica.pod} (${progress})` };
  const m = o.instances.find((i) => i.pod === o.master);
  if (!m) return { kind: 'wait', why: 'no master' };
  if (o.desired === 1) return { kind: 'deletePod', pod: m.pod, why: 'a single instance restarts in place' };
  const to = switchoverTarget(o.instances, m, (i) => current.has(i.pod) && i.ordinal < o.desired);
  if (!to) return { kind: 'wait', why: 'no updated replica in sync to hand the master role to' };
  return { kind: 'switchover', from: m, to, why: `upgrade: the master restarts last (${progress})` };
};
