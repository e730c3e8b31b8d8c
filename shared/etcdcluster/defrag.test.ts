import { describe, expect, it } from 'vitest';
import { type DefragInput, defragDecision, everyMs } from './defrag.ts';

const MADE = new Date('2026-11-01T00:00:00.000Z');
const H = 3_600_000;
const at = (ms: number) => new Date(MADE.getTime() + ms);
const iso = (ms: number) => at(ms).toISOString();

/** e-0, e-1 (the leader), e-10: ordinals, not strings, order the followers. */
const input = (o: Partial<DefragInput> = {}): DefragInput => ({
  every: '24h',
  now: at(25 * H),
  last: MADE,
  ready: true,
  memberPrefix: 'e',
  members: [
    { name: 'e-10', leader: false, lastDefragmentation: undefined },
    { name: 'e-1', leader: true, lastDefragmentation: undefined },
    { name: 'e-2', leader: false, lastDefragmentation: undefined },
  ],
  ...o,
});

describe('everyMs', () => {
  it('reads minutes and hours as CEL admits them, nothing else', () => {
    expect(everyMs('30m')).toBe(30 * 60_000);
    expect(everyMs('24h')).toBe(24 * H);
    for (const bad of [undefined, '', '0h', '1d', '1h30m', '24', '-1h', '100000h'])
      expect(everyMs(bad)).toBeUndefined();
  });
});

describe('defragDecision', () => {
  it('is off without spec.defragmentation', () => {
    expect(defragDecision(input({ every: undefined }))).toEqual({ kind: 'off' });
  });

  it('is due `every` after the cluster was made, then after the previous round finished', () => {
    expect(defragDecision(input({ now: at(23 * H) }))).toEqual({ kind: 'notDue', due: at(24 * H) });
    expect(defragDecision(input({ now: at(24 * H) })).kind).toBe('defragment');
    expect(defragDecision(input({ last: at(20 * H), now: at(25 * H) }))).toEqual({
      kind: 'notDue',
      due: at(44 * H),
    });
  });

  it('takes the followers first, by ordinal, and the leader last', () => {
    expect(defragDecision(input())).toEqual({ kind: 'defragment', member: 'e-2', leader: false });
    const e2done = input({
      members: input().members.map((m) =>
        m.name === 'e-2' ? { ...m, lastDefragmentation: iso(24.5 * H) } : m,
      ),
    });
    expect(defragDecision(e2done)).toEqual({ kind: 'defragment', member: 'e-10', leader: false });
    const followersDone = input({
      members: input().members.map((m) => (m.leader ? m : { ...m, lastDefragmentation: iso(24.5 * H) })),
    });
    expect(defragDecision(followersDone)).toEqual({ kind: 'defragment', member: 'e-1', leader: true });
  });

  it('counts a member defragmented before the round became due as not done', () => {
    // e-2 was defragmented in the previous round (before the due time): it is done again.
    const r = defragDecision(
      input({
        last: at(10 * H),
        now: at(35 * H),
        members: input().members.map((m) => ({
          ...m,
          lastDefragmentation: iso(m.leader ? 34.2 * H : 9 * H),
        })),
      }),
    );
    expect(r).toEqual({ kind: 'defragment', member: 'e-2', leader: false });
  });

  it('never starts a member while the cluster is not ready and healthy', () => {
    expect(defragDecision(input({ ready: false }))).toEqual({ kind: 'blocked', due: at(24 * H) });
  });

  it('ends the round when every member is done, at the last one’s time, even while unhealthy', () => {
    const all = input({
      ready: false,
      members: input().members.map((m, i) => ({ ...m, lastDefragmentation: iso(24 * H + i * 60_000) })),
    });
    expect(defragDecision(all)).toEqual({ kind: 'roundDone', at: iso(24 * H + 2 * 60_000) });
  });
});
