import { describe, expect, it } from 'vitest';
import { type LagInput, lagOf } from './lag.ts';

const T0 = new Date('2026-11-26T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

/** e-0..e-2 voters, e-1 leads (not the first member, not the highest index). */
const input = (o: Partial<LagInput> = {}): LagInput => ({
  members: ['e-0', 'e-1', 'e-2'].map((name, i) => ({ id: String(100 + i), name, learner: false })),
  raftIndex: new Map([
    ['e-0', 5000],
    ['e-1', 5000],
    ['e-2', 5000],
  ]),
  leader: '101',
  since: new Map(),
  now: T0,
  threshold: 1000,
  graceMs: 30_000,
  ...o,
});

describe('lagOf: raft index lag against the leader', () => {
  it('measures against the leader’s index, not the highest seen nor the first member’s', () => {
    // e-0 was asked a moment after the leader and looks ahead: e-2 is 900 behind the leader
    // (under the threshold of 1000) but 1100 behind the highest index, which is e-0's.
    const r = lagOf(
      input({
        raftIndex: new Map([
          ['e-0', 6200],
          ['e-1', 6000],
          ['e-2', 5100],
        ]),
      }),
    );
    expect(r.members.get('e-2')).toEqual({ lag: 900, laggingSince: undefined });
    // Ahead of the leader is no lag (a later sample), never negative.
    expect(r.members.get('e-0')?.lag).toBe(0);
    expect(r.members.get('e-1')?.lag).toBe(0);
  });

  it('starts the clock above the threshold and says lagging only after the grace period', () => {
    const behind = input({
      raftIndex: new Map([
        ['e-0', 5000],
        ['e-1', 5000],
        ['e-2', 3000],
      ]),
    });
    const first = lagOf(behind);
    expect(first.members.get('e-2')).toEqual({ lag: 2000, laggingSince: T0.toISOString() });
    expect(first.lagging).toEqual([]);
    const since = new Map([['e-2', T0.toISOString()]]);
    expect(lagOf({ ...behind, since, now: at(29_999) }).lagging).toEqual([]);
    expect(lagOf({ ...behind, since, now: at(30_000) }).lagging).toEqual([
      { name: 'e-2', lag: 2000, since: T0.toISOString() },
    ]);
  });

  it('forgets the lag once the member is back within the threshold', () => {
    const since = new Map([['e-2', T0.toISOString()]]);
    const r = lagOf(input({ since, now: at(60_000) }));
    expect(r.members.get('e-2')).toEqual({ lag: 0, laggingSince: undefined });
    expect(r.lagging).toEqual([]);
  });

  it('shows a learner’s lag but never counts a learner catching up as lagging', () => {
    const members = [...input().members, { id: '103', name: 'e-3', learner: true }];
    const raftIndex = new Map([...input().raftIndex, ['e-3', 10]]);
    const since = new Map([['e-3', T0.toISOString()]]);
    const r = lagOf(input({ members, raftIndex, since, now: at(120_000) }));
    expect(r.members.get('e-3')).toEqual({ lag: 4990, laggingSince: undefined });
    expect(r.lagging).toEqual([]);
  });

  it('knows no lag without the leader’s answer, and keeps what was recorded', () => {
    const since = new Map([['e-2', T0.toISOString()]]);
    const r = lagOf(
      input({
        raftIndex: new Map([
          ['e-0', 9000],
          ['e-2', 100],
        ]),
        since,
        now: at(60_000),
      }),
    );
    // Not measured against e-0's 9000, the highest index there is.
    expect(r.members.get('e-2')).toEqual({ lag: undefined, laggingSince: T0.toISOString() });
    expect(r.lagging).toEqual([]);
    expect(lagOf(input({ leader: undefined })).members.get('e-0')?.lag).toBeUndefined();
  });
});
