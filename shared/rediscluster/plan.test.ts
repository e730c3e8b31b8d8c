import { describe, expect, it } from 'vitest';
import { planTopology } from './plan.ts';
import type { Instance } from './probe.ts';
import { recordHistory } from './promotion.ts';

const master = (
  pod: string,
  ordinal: number,
  offset: number,
  replicas = 0,
  role?: 'master' | 'replica',
): Instance => ({
  pod,
  ordinal,
  ip: `10.0.0.${ordinal + 10}`,
  podReady: true,
  terminating: false,
  ...(role ? { labelledRole: role } : {}),
  replication: {
    role: 'master',
    offset,
    replid: 'r',
    replicas: Array.from({ length: replicas }, () => ({
      ip: 'x',
      port: 6379,
      state: 'online',
      offset,
      lag: 0,
    })),
  },
});
const replica = (
  pod: string,
  ordinal: number,
  offset: number,
  of: string,
  role?: 'master' | 'replica',
): Instance => ({
  pod,
  ordinal,
  ip: `10.0.0.${ordinal + 10}`,
  podReady: true,
  terminating: false,
  ...(role ? { labelledRole: role } : {}),
  replication: {
    role: 'replica',
    offset,
    masterHost: of,
    masterPort: of === '127.0.0.1' ? 1 : 6379,
    linkUp: of !== '127.0.0.1',
    syncInProgress: false,
    replid: 'r',
    replid2: '',
    linkDownSeconds: of === '127.0.0.1' ? Number.POSITIVE_INFINITY : 0,
  },
});
const down = (pod: string, ordinal: number, role?: 'master' | 'replica'): Instance => ({
  pod,
  ordinal,
  ip: `10.0.0.${ordinal + 10}`,
  podReady: false,
  terminating: false,
  ...(role ? { labelledRole: role } : {}),
});

describe('topology plan', () => {
  it('starts a new cluster with ordinal 0 as master and the others following it', () => {
    const plan = planTopology(
      [
        replica('c-0', 0, 0, '127.0.0.1'),
        replica('c-1', 1, 0, '127.0.0.1'),
        replica('c-2', 2, 0, '127.0.0.1'),
      ],
      undefined,
    );
    expect(plan.master).toBe('c-0');
    expect(plan.change).toEqual({ from: undefined, reason: 'Initial' });
    expect(plan.commands).toEqual([
      { pod: 'c-0', ip: '10.0.0.10', args: ['REPLICAOF', 'NO', 'ONE'] },
      { pod: 'c-1', ip: '10.0.0.11', args: ['REPLICAOF', '10.0.0.10', '6379'] },
      { pod: 'c-2', ip: '10.0.0.12', args: ['REPLICAOF', '10.0.0.10', '6379'] },
    ]);
    expect(plan.labels).toEqual([
      { pod: 'c-0', role: 'master' },
      { pod: 'c-1', role: 'replica' },
      { pod: 'c-2', role: 'replica' },
    ]);
  });

  it('does nothing when everything is in place', () => {
    const plan = planTopology(
      [
        master('c-0', 0, 100, 2, 'master'),
        replica('c-1', 1, 100, '10.0.0.10', 'replica'),
        replica('c-2', 2, 90, '10.0.0.10', 'replica'),
      ],
      'c-0',
    );
    expect(plan).toEqual({ master: 'c-0', commands: [], labels: [], blocked: [] });
  });

  it('puts a pod that came back (fenced, as a replica of nothing) back in its place', () => {
    const plan = planTopology(
      [
        master('c-0', 0, 100, 1, 'master'),
        replica('c-1', 1, 100, '10.0.0.10', 'replica'),
        replica('c-2', 2, 40, '127.0.0.1'),
      ],
      'c-0',
    );
    expect(plan.commands).toEqual([
      { pod: 'c-2', ip: '10.0.0.12', args: ['REPLICAOF', '10.0.0.10', '6379'] },
    ]);
    expect(plan.labels).toEqual([{ pod: 'c-2', role: 'replica' }]);
  });

  it('never lets replicas follow a master that came back with less data, and promotes no one itself', () => {
    const plan = planTopology(
      [
        replica('c-0', 0, 50, '127.0.0.1', 'master'),
        replica('c-1', 1, 100, '10.0.0.10', 'replica'),
        replica('c-2', 2, 120, '10.0.0.10', 'replica'),
      ],
      'c-0',
    );
    // Health decides on a failover, with its rules; reconcile keeps the record and sends nothing.
    expect(plan.master).toBe('c-0');
    expect(plan.change).toBeUndefined();
    expect(plan.commands).toEqual([]);
    expect(plan.labels).toEqual([{ pod: 'c-0', role: null }]);
    expect(plan.blocked.join()).toMatch(/c-0 came back with less data than c-1/);
  });

  it('keeps a fenced master short of the recorded offset out while an instance that may hold the rest does not answer', () => {
    // c-0 restarted from an older snapshot (offset 50; 100 recorded); c-1 is still loading.
    const history = { id: 'r', offset: 100 };
    const fenced = replica('c-0', 0, 50, '127.0.0.1', 'master');
    // Up (its pod Ready: Redis listens while it loads) and not answering yet.
    const loading = { ...down('c-1', 1), podReady: true };
    const plan = planTopology([fenced, loading, replica('c-2', 2, 40, '127.0.0.1')], 'c-0', 3, history);
    expect(plan.commands).toEqual([]);
    expect(plan.blocked.join()).toMatch(
      /c-0 came back at offset 50 of the 100 recorded, and c-1 does not answer, which may hold the rest: it stays fenced/,
    );
    // Every instance answers and none holds more: what c-0 has is all there is.
    const all = planTopology(
      [fenced, replica('c-1', 1, 45, '127.0.0.1'), replica('c-2', 2, 40, '127.0.0.1')],
      'c-0',
      3,
      history,
    );
    expect(all.commands[0]).toEqual({ pod: 'c-0', ip: '10.0.0.10', args: ['REPLICAOF', 'NO', 'ONE'] });
    // One that may never answer (its node lost: not Ready, or terminating; no address) is not waited for.
    for (const gone of [down('c-1', 1), { ...loading, terminating: true }, { ...loading, ip: undefined }]) {
      const lost = planTopology([fenced, gone, replica('c-2', 2, 40, '127.0.0.1')], 'c-0', 3, history);
      expect(lost.commands[0]).toEqual({ pod: 'c-0', ip: '10.0.0.10', args: ['REPLICAOF', 'NO', 'ONE'] });
    }
    // A master with all the recorded data is put back whoever is silent.
    const whole = planTopology([replica('c-0', 0, 100, '127.0.0.1'), loading], 'c-0', 2, history);
    expect(whole.commands).toEqual([{ pod: 'c-0', ip: '10.0.0.10', args: ['REPLICAOF', 'NO', 'ONE'] }]);
    // Of another history than the record's (a restore loaded it), the record's offset says nothing.
    const other = planTopology([fenced, loading], 'c-0', 2, { id: 'q', offset: 100 });
    expect(other.commands[0]?.args).toEqual(['REPLICAOF', 'NO', 'ONE']);
  });

  it('judges a fenced master behind only against instances of the cluster history', () => {
    // c-2 holds more, but of another history (an old volume): it does not make c-0 "behind".
    const stranger = replica('c-2', 2, 500, '127.0.0.1');
    const foreign = { ...stranger, replication: { ...stranger.replication, replid: 'other' } } as Instance;
    const plan = planTopology(
      [
        replica('c-0', 0, 100, '127.0.0.1', 'master'),
        replica('c-1', 1, 100, '10.0.0.10', 'replica'),
        foreign,
      ],
      'c-0',
      3,
      { id: 'r' },
    );
    expect(plan.blocked.join()).not.toMatch(/less data/);
    expect(plan.commands).toContainEqual({ pod: 'c-0', ip: '10.0.0.10', args: ['REPLICAOF', 'NO', 'ONE'] });
  });

  it('lets a replica restarted from its append-only file follow again: offset 1 of a fresh id, never connected', () => {
    const restarted = (offset: number) => {
      const r = replica('c-1', 1, offset, '127.0.0.1');
      return { ...r, keys: 500, replication: { ...r.replication, replid: 'fresh' } } as Instance;
    };
    const m = { ...master('c-0', 0, 900, 1, 'master'), keys: 500 };
    const plan = planTopology([m, restarted(1)], 'c-0', 2, { id: 'r' });
    expect(plan.commands).toContainEqual({
      pod: 'c-1',
      ip: '10.0.0.11',
      args: ['REPLICAOF', '10.0.0.10', '6379'],
    });
    // The same data at a real offset of an unknown id (an RDB of another history): left alone.
    const other = planTopology([m, restarted(700)], 'c-0', 2, { id: 'r' });
    expect(other.commands).toEqual([]);
    expect(other.blocked.join()).toMatch(/c-1/);
  });

  it('resynchronizes an instance that still holds data a restore replaced (superseded); others of another history stay', () => {
    const stale = (replid: string) => {
      const r = replica('c-1', 1, 5000, '127.0.0.1');
      return { ...r, keys: 500, replication: { ...r.replication, replid } } as Instance;
    };
    const m = { ...master('c-0', 0, 900, 0, 'master'), keys: 40 };
    const history = { id: 'r', previous: ['feed'], superseded: ['before-restore'] };
    expect(planTopology([m, stale('before-restore')], 'c-0', 2, history).commands).toContainEqual({
      pod: 'c-1',
      ip: '10.0.0.11',
      args: ['REPLICAOF', '10.0.0.10', '6379'],
    });
    expect(planTopology([m, stale('elsewhere')], 'c-0', 2, history).commands).toEqual([]);
  });

  it("never promotes when the recorded master's pod is absent (between a delete and its re-creation)", () => {
    const plan = planTopology(
      [replica('c-1', 1, 100, '10.0.0.10', 'replica'), replica('c-2', 2, 100, '10.0.0.10', 'replica')],
      'c-0',
    );
    expect(plan.master).toBe('c-0');
    expect(plan.change).toBeUndefined();
    expect(plan.commands).toEqual([]);
    expect(plan.labels).toEqual([]);
    expect(plan.blocked).toEqual(['master c-0 does not answer']);
  });

  it('makes the instance with the most data the first master of a cluster re-created on old volumes', () => {
    const plan = planTopology(
      [
        replica('c-0', 0, 1, '127.0.0.1'),
        replica('c-1', 1, 5000, '127.0.0.1'),
        replica('c-2', 2, 4000, '127.0.0.1'),
      ],
      undefined,
      3,
    );
    expect(plan.master).toBe('c-1');
    expect(plan.commands[0]).toEqual({ pod: 'c-1', ip: '10.0.0.11', args: ['REPLICAOF', 'NO', 'ONE'] });
  });

  it('chooses no first master while an instance does not answer: it may be the one with the data', () => {
    const plan = planTopology([replica('c-0', 0, 1, '127.0.0.1'), down('c-1', 1)], undefined, 2);
    expect(plan.master).toBeUndefined();
    expect(plan.commands).toEqual([]);
    expect(plan.blocked.join()).toMatch(/waiting for c-1/);
  });

  it('never makes an instance with data of another history follow the master; an empty one or a former master does', () => {
    const foreign = { ...replica('c-2', 2, 900, '127.0.0.1'), keys: 5 };
    foreign.replication = { ...foreign.replication!, replid: 'other' } as Instance['replication'];
    const plan = planTopology(
      [master('c-0', 0, 100, 0, 'master'), replica('c-1', 1, 100, '10.0.0.10', 'replica'), foreign],
      'c-0',
    );
    expect(plan.commands).toEqual([]);
    expect(plan.labels).toEqual([]);
    expect(plan.blocked.join()).toMatch(/c-2 holds data of another replication history than master c-0/);

    const empty = { ...foreign, keys: 0 };
    // A former master: its history is the one the master continued from after the promotion.
    const newMaster = master('c-0', 0, 100, 0, 'master');
    newMaster.replication = {
      ...newMaster.replication!,
      replid: 'new',
      replid2: 'other',
    } as Instance['replication'];
    for (const [m, i] of [
      [master('c-0', 0, 100, 0, 'master'), empty],
      [newMaster, foreign],
    ] as const)
      expect(planTopology([m, i], 'c-0').commands).toEqual([
        { pod: 'c-2', ip: '10.0.0.12', args: ['REPLICAOF', '10.0.0.10', '6379'] },
      ]);
  });

  it('never makes an instance ahead of the master in the same history follow it (it would drop acknowledged writes)', () => {
    // c-0 serves as master at offset 100 (it restarted from an older snapshot of the same
    // history); c-1, cut off, holds up to 500 of that history.
    const ahead = { ...replica('c-1', 1, 500, '127.0.0.1'), keys: 10 };
    const linked = { ...replica('c-2', 2, 150, '10.0.0.10'), keys: 10 };
    const plan = planTopology([master('c-0', 0, 100, 1, 'master'), ahead, linked], 'c-0');
    expect(plan.commands).toEqual([]);
    expect(plan.blocked.join()).toMatch(
      /c-1 is ahead of master c-0 in the same replication history \(offset 500 > 100\)/,
    );
    // A linked replica's offset a moment after the master's probe is no sign of anything; an
    // empty instance, or one behind, follows.
    expect(plan.blocked.join()).not.toMatch(/c-2/);
    for (const i of [
      { ...ahead, keys: 0 },
      { ...ahead, replication: { ...ahead.replication!, offset: 90 } as Instance['replication'] },
    ])
      expect(planTopology([master('c-0', 0, 100, 0, 'master'), i], 'c-0').commands).toEqual([
        { pod: 'c-1', ip: '10.0.0.11', args: ['REPLICAOF', '10.0.0.10', '6379'] },
      ]);
  });

  it('with the master down, leaves its replicas serving and unlabels what is unknown', () => {
    const plan = planTopology(
      [
        down('c-0', 0, 'master'),
        replica('c-1', 1, 100, '10.0.0.10', 'replica'),
        replica('c-2', 2, 0, '127.0.0.1', 'replica'),
      ],
      'c-0',
    );
    expect(plan.master).toBe('c-0');
    expect(plan.commands).toEqual([]);
    // c-1 still serves reads; c-0 is fenced off the Service until it is known again; c-2 follows no one.
    expect(plan.labels).toEqual([
      { pod: 'c-0', role: null },
      { pod: 'c-2', role: null },
    ]);
  });

  it('adopts a running master with replicas when the status lost track', () => {
    const plan = planTopology(
      [replica('c-0', 0, 100, '10.0.0.11'), master('c-1', 1, 100, 1), replica('c-2', 2, 0, '127.0.0.1')],
      undefined,
    );
    expect(plan.master).toBe('c-1');
    expect(plan.change?.reason).toBe('Adopted');
  });

  it('adopts the master the recorded one follows: a switchover whose record was never written', () => {
    const plan = planTopology(
      [
        replica('c-0', 0, 100, '10.0.0.11', 'master'),
        master('c-1', 1, 100, 2, 'replica'),
        replica('c-2', 2, 100, '10.0.0.10', 'replica'),
      ],
      'c-0',
    );
    expect(plan.master).toBe('c-1');
    expect(plan.change).toEqual({ from: 'c-0', reason: 'Adopted' });
    expect(plan.commands).toEqual([
      { pod: 'c-2', ip: '10.0.0.12', args: ['REPLICAOF', '10.0.0.11', '6379'] },
    ]);
    // The old master loses its label before the new one gets it: never two behind the Service.
    expect(plan.labels).toEqual([
      { pod: 'c-0', role: 'replica' },
      { pod: 'c-1', role: 'master' },
    ]);
  });

  it('still lets an instance of an earlier id of the same data follow after the master was reinstated twice', () => {
    // a → b (reinstated) → c (reinstated again): the server only remembers b; the record all three.
    const h = recordHistory(
      recordHistory(recordHistory(undefined, { replid: 'a', offset: 10 }), { replid: 'b', offset: 20 }),
      { replid: 'c', offset: 30 },
    );
    expect(h).toEqual({ id: 'c', offset: 30, previous: ['b', 'a'] });
    const m = master('c-0', 0, 30, 0, 'master');
    m.replication = { ...m.replication!, replid: 'c', replid2: 'b' } as Instance['replication'];
    const old = { ...replica('c-1', 1, 10, '127.0.0.1'), keys: 3 };
    old.replication = { ...old.replication!, replid: 'a' } as Instance['replication'];
    expect(planTopology([m, old], 'c-0', 2).commands).toEqual([]);
    expect(planTopology([m, old], 'c-0', 2, h).commands).toEqual([
      { pod: 'c-1', ip: '10.0.0.11', args: ['REPLICAOF', '10.0.0.10', '6379'] },
    ]);
  });
});
