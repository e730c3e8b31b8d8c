import type { Command } from './plan.ts';
import type { Instance } from './probe.ts';
import type { WriteQuorum } from './redis-conf.ts';

const set = (i: Instance & { ip: string }, name: string, value: number): Command => ({
  pod: i.pod,
  ip: i.ip,
  args: ['CONFIG', 'SET', name, String(value)],
});

/** Replicas that have acknowledged within `maxLag` seconds: what Redis counts for min-replicas-to-write. */
const inTouch = (i: Instance, maxLag: number) =>
  i.replication?.role === 'master'
    ? i.replication.replicas.filter((l) => l.state === 'online' && l.lag <= maxLag).length
    : 0;

/**
 * What brings every answering server to the cluster's write quorum (writeQuorum). Replicas and
 * fenced servers take it at once, so whichever is promoted later — by a failover, a switchover, a
 * restore or reconcile — takes writes on those terms from its first one. A serving master takes
 * a lower one at once, and a higher one only once that many replicas are in touch with it: raised
 * earlier (a scale-up from one instance, the new replicas in their first sync) it would refuse
 * writes for nothing. `unknown`: servers that answer but whose quorum could not be read; no role
 * is given to them until it is. `waiting` says why the quorum is not everywhere yet.
 */
export const planQuorum = (
  instances: readonly Instance[],
  target: WriteQuorum,
): { commands: Command[]; unknown: string[]; waiting?: string } => {
  const commands: Command[] = [];
  const unknown: string[] = [];
  const waiting: string[] = [];
  for (const i of instances) {
    // Not answering, or on its way out: nothing to set.
    if (!i.ip || !i.replication || i.terminating) continue;
    const q = i.quorum;
    if (!q) {
      unknown.push(i.pod);
      waiting.push(`the write quorum of ${i.pod} could not be read`);
      continue;
    }
    const at = { ...i, ip: i.ip };
    if (q.maxLag !== target.maxLag) commands.push(set(at, 'min-replicas-max-lag', target.maxLag));
    if (q.toWrite === target.toWrite) continue;
    if (
      i.replication.role !== 'master' ||
      target.toWrite < q.toWrite ||
      inTouch(i, target.maxLag) >= target.toWrite
    )
      commands.push(set(at, 'min-replicas-to-write', target.toWrite));
    else
      waiting.push(
        `${i.pod} takes min-replicas-to-write ${target.toWrite} once ${target.toWrite} replica${target.toWrite > 1 ? 's are' : ' is'} in sync with it`,
      );
  }
  return { commands, unknown, ...(waiting.length > 0 ? { waiting: waiting.join('; ') } : {}) };
};
