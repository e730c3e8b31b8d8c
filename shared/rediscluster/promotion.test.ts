import { describe, expect, it } from 'vitest';
import type { Replication } from '../redis/info.ts';
import { changedSince, historyIds, type Identity, recordHistory } from './promotion.ts';

describe('recordHistory', () => {
  it('keeps the same record while the id does not change, with the newest offset', () => {
    const h = recordHistory({ id: 'a', offset: 1, previous: ['z'] }, { replid: 'a', offset: 9 });
    expect(h).toEqual({ id: 'a', offset: 9, previous: ['z'] });
  });

  it('pushes the record and the id the master continued from, newest first, at most 8', () => {
    // 'b' was never seen serving (a second promotion came first): the master still names it.
    const h = recordHistory({ id: 'a', offset: 5 }, { replid: 'c', replid2: 'b', offset: 7 });
    expect(h).toEqual({ id: 'c', offset: 7, previous: ['b', 'a'] });
    const long = recordHistory(
      { id: 'x', offset: 0, previous: ['1', '2', '3', '4', '5', '6', '7', '8'] },
      { replid: 'y', offset: 1 },
    );
    expect(long.previous).toEqual(['x', '1', '2', '3', '4', '5', '6', '7']);
    expect(historyIds(long)).toEqual(['y', 'x', '1', '2', '3', '4', '5', '6', '7']);
  });

  it('never records the zero id of a server that never had a master', () => {
    const h = recordHistory({ id: 'a', offset: 1 }, { replid: 'b', replid2: '0'.repeat(40), offset: 2 });
    expect(h.previous).toEqual(['a']);
  });
});

describe('changedSince: the target is still the instance that was judged', () => {
  const judged: Replication = {
    role: 'replica',
    offset: 5000,
    masterHost: '10.0.0.10',
    masterPort: 6379,
    linkUp: false,
    syncInProgress: false,
    replid: 'a'.repeat(40),
    replid2: '',
    linkDownSeconds: 4,
  };
  const now = (r: Partial<Replication> = {}, more: Partial<Identity> = {}): Identity => ({
    runId: 'run-1',
    loading: false,
    replication: { ...judged, linkDownSeconds: 6, ...r } as Replication,
    ...more,
  });

  it('holds while the same process stands where it was judged (its link down a little longer)', () => {
    expect(changedSince(judged, now())).toBeUndefined();
    expect(changedSince(judged, now(), 'run-1')).toBeUndefined();
  });

  it('is void after a restart, whatever the server came back with', () => {
    // Another process: even with the same data on disk.
    expect(changedSince(judged, now({}, { runId: 'run-2' }), 'run-1')).toMatch(/^restarted \(run_id/);
    // Empty: a fenced server with a fresh id reports offset 1.
    expect(changedSince(judged, now({ replid: 'f'.repeat(40), offset: 1 }))).toMatch(
      /another replication history/,
    );
    // From an older snapshot of the same history.
    expect(changedSince(judged, now({ offset: 3000 }))).toBe('moved from offset 5000 to 3000');
    // From a snapshot of exactly that point: its link has not been up since it started.
    expect(changedSince(judged, now({ linkDownSeconds: Number.POSITIVE_INFINITY }))).toMatch(/restarted/);
    expect(changedSince(judged, now({}, { loading: true }))).toMatch(/loading/);
  });

  it('is void when the master came back or a sync started meanwhile', () => {
    expect(changedSince(judged, now({ linkUp: true, linkDownSeconds: 0 }))).toMatch(/link to a master up/);
    expect(changedSince(judged, now({ syncInProgress: true }))).toMatch(/full sync/);
    expect(
      changedSince(
        judged,
        now({ role: 'master', replicas: [], replid: judged.replid } as Partial<Replication>),
      ),
    ).toBe('is no longer a replica');
  });
});

describe('history after a restore', () => {
  it('keeps what a restore replaced as superseded, never as history', () => {
    const h = recordHistory(
      { id: 'new', previous: ['feed'], superseded: ['old'] },
      { replid: 'newer', replid2: 'new', offset: 9 },
    );
    expect(h).toEqual({ id: 'newer', offset: 9, previous: ['new', 'feed'], superseded: ['old'] });
    expect(historyIds(h)).not.toContain('old');
  });
});
