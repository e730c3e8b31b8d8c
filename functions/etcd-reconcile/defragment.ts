import type { EtcdCluster } from '../../shared/api/generated.ts';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { defragDecision } from '../../shared/etcdcluster/defrag.ts';
import type { Seen } from '../../shared/etcdcluster/observe.ts';
import type { EventRecorder, Regarding } from '../../shared/kube/events.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';

/**
 * A member's defragmentation holds it (reads and writes wait) until done. The run's own timeout
 * is 60 s; a database that takes longer still finishes on the member, and the next run, finding
 * it not recorded, asks again (etcd queues a second request behind the first).
 */
const DEFRAG_TIMEOUT_MS = 40_000;

/** What the run's status write records. */
export type Defragmented = { member?: { name: string; at: string }; roundDone?: string };

/**
 * The next step of spec.defragmentation (shared/etcdcluster/defrag.ts decides): defragments one
 * member through the maintenance API, or ends the round. `ready` is the planner converged and the
 * cluster Healthy; the caller only asks in a run that changed nothing else.
 */
export const defragmentNext = async (d: {
  cluster: EtcdCluster;
  seen: Seen;
  client: EtcdClient;
  ready: boolean;
  ctx: HandlerContext;
  recorder: EventRecorder;
  regarding: Regarding;
}): Promise<Defragmented | undefined> => {
  const { cluster: c, seen, ctx } = d;
  const recorded = new Map((c.status?.members ?? []).map((m) => [m.name, m.lastDefragmentation]));
  const decision = defragDecision({
    every: c.spec.defragmentation?.every,
    now: ctx.clock(),
    last: new Date(
      c.status?.lastDefragmentation ?? c.metadata.creationTimestamp ?? ctx.clock().toISOString(),
    ),
    ready: d.ready,
    memberPrefix: seen.observed.memberPrefix,
    members: (seen.observed.members ?? []).map((m) => ({
      name: m.name,
      leader: m.id === seen.observed.leader,
      lastDefragmentation: recorded.get(m.name),
    })),
  });
  if (decision.kind === 'roundDone') return { roundDone: decision.at };
  if (decision.kind === 'blocked')
    ctx.log.debug('defragmentation due, waiting for the cluster to be ready and healthy', {
      due: decision.due.toISOString(),
    });
  if (decision.kind !== 'defragment') return undefined;

  const member = decision.member;
  const endpoint = seen.statuses.get(member)?.endpoint;
  if (!endpoint) return undefined;
  const before = seen.statuses.get(member)?.dbSize;
  ctx.fence();
  try {
    await d.client.defragment(endpoint, { signal: ctx.signal, timeoutMs: DEFRAG_TIMEOUT_MS });
  } catch (error) {
    const message = `defragmenting ${member} failed: ${(error as Error).message}`;
    ctx.log.warn(message, { member });
    await d.recorder.record({
      regarding: d.regarding,
      type: 'Warning',
      reason: 'DefragmentFailed',
      action: 'defragment',
      note: message,
    });
    return undefined;
  }
  const at = ctx.clock().toISOString();
  const after = await d.client
    .status(endpoint, { signal: ctx.signal, timeoutMs: 3000 })
    .then((s) => s.dbSize)
    .catch(() => undefined);
  const note = `defragmented ${member}${decision.leader ? ' (the leader, last)' : ''}: database ${before ?? '?'} → ${after ?? '?'} bytes`;
  ctx.log.info(note, { member });
  await d.recorder.record({
    regarding: d.regarding,
    type: 'Normal',
    reason: 'Defragmented',
    action: 'defragment',
    note,
  });
  return { member: { name: member, at } };
};

/** The status with what defragmentNext did. */
export const withDefragmented = <S extends NonNullable<EtcdCluster['status']>>(
  s: S,
  d: Defragmented | undefined,
): S => {
  if (!d) return s;
  const done = d.member;
  const members = done
    ? (s.members ?? []).map((m) => (m.name === done.name ? { ...m, lastDefragmentation: done.at } : m))
    : s.members;
  return {
    ...s,
    ...(members ? { members } : {}),
    ...(d.roundDone ? { lastDefragmentation: d.roundDone } : {}),
  };
};
