/**
 * Periodic defragmentation (spec.defragmentation.every): a round defragments every member once,
 * one member per run, followers first and the leader last (defragmenting blocks a member's reads
 * and writes meanwhile; the leader's blocking is felt by every write). A round is due `every`
 * after the previous one finished — after the cluster was made for the first — and a member
 * defragmented since the round became due is done with it.
 */
import { ordinalOf } from './names.ts';

/** `every` as CEL admits it (30m, 24h): milliseconds, or undefined for anything else. */
export const everyMs = (every: string | undefined): number | undefined => {
  const m = /^([1-9][0-9]{0,4})(m|h)$/.exec(every ?? '');
  if (!m) return undefined;
  return Number(m[1]) * (m[2] === 'h' ? 3_600_000 : 60_000);
};

export type DefragInput = {
  /** spec.defragmentation.every; off when undefined. */
  every: string | undefined;
  now: Date;
  /** When the last round finished (status.lastDefragmentation), else when the cluster was made. */
  last: Date;
  /** Every member answers, none lags, no alarm, the spec reached: only then a member may block. */
  ready: boolean;
  memberPrefix: string;
  members: readonly { name: string; leader: boolean; lastDefragmentation: string | undefined }[];
};

export type DefragDecision =
  | { kind: 'off' }
  | { kind: 'notDue'; due: Date }
  | { kind: 'blocked'; due: Date }
  | { kind: 'defragment'; member: string; leader: boolean }
  /** Every member was defragmented since the round became due: the round ends at `at`. */
  | { kind: 'roundDone'; at: string };

export const defragDecision = (i: DefragInput): DefragDecision => {
  const ms = everyMs(i.every);
  if (ms === undefined) return { kind: 'off' };
  const due = new Date(i.last.getTime() + ms);
  if (i.now < due) return { kind: 'notDue', due };
  if (i.members.length === 0) return { kind: 'blocked', due };
  const pending = i.members.filter(
    (m) => !m.lastDefragmentation || Date.parse(m.lastDefragmentation) < due.getTime(),
  );
  if (pending.length === 0) {
    const at = Math.max(...i.members.map((m) => Date.parse(m.lastDefragmentation ?? '')));
    return { kind: 'roundDone', at: new Date(Number.isFinite(at) ? at : i.now.getTime()).toISOString() };
  }
  if (!i.ready) return { kind: 'blocked', due };
  const next = [...pending].sort(
    (a, b) =>
      Number(a.leader) - Number(b.leader) ||
      ordinalOf(i.memberPrefix, a.name) - ordinalOf(i.memberPrefix, b.name) ||
      a.name.localeCompare(b.name),
  )[0];
  return next ? { kind: 'defragment', member: next.name, leader: next.leader } : { kind: 'blocked', due };
};
