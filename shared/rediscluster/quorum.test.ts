import { describe, expect, it } from 'vitest';
import type { ReplicaLink } from '../redis/info.ts';
import type { Instance } from './probe.ts';
import { planQuorum } from './quorum.ts';

const link = (state: string, lag: number): ReplicaLink => ({
  ip: '10.0.0.2',
  port: 6379,
  state,
  offset: 1,
  lag,
});
const masterAt = (toWrite: number, replicas: ReplicaLink[] = [], maxLag = 10): Instance => ({
  pod: 'c-0',
  ordinal: 0,
  ip: '10.0.0.1',
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset: 1, replid: 'a', replicas },
  quorum: { toWrite, maxLag },
});
const replicaAt = (toWrite: number, maxLag = 10): Instance => ({
  pod: 'c-1',
  ordinal: 1,
  ip: '10.0.0.2',
  podReady: true,
  terminating: false,
  replication: {
    role: 'replica',
    offset: 1,
    masterHost: '10.0.0.1',
    masterPort: 6379,
    linkUp: false,
    syncInProgress: true,
    replid: 'a',
    replid2: '',
    linkDownSeconds: 3,
  },
  quorum: { toWrite, maxLag },
});
const args = (p: ReturnType<typeof planQuorum>) => p.commands.map((c) => `${c.pod}: ${c.args.join(' ')}`);
const one = { toWrite: 1, maxLag: 10 };

describe('planQuorum', () => {
  it('gives a replica the quorum at once, in sync or not: whichever is promoted takes writes on its terms', () => {
    expect(args(planQuorum([replicaAt(0)], one))).toEqual(['c-1: CONFIG SET min-replicas-to-write 1']);
    expect(args(planQuorum([replicaAt(1, 30)], one))).toEqual(['c-1: CONFIG SET min-replicas-max-lag 10']);
    expect(planQuorum([replicaAt(1)], one)).toEqual({ commands: [], unknown: [] });
  });

  it('lowers a serving master at once (a scale-down to one instance)', () => {
    expect(args(planQuorum([masterAt(1)], { toWrite: 0, maxLag: 10 }))).toEqual([
      'c-0: CONFIG SET min-replicas-to-write 0',
    ]);
  });

  it('raises a serving master only once that many replicas are in touch with it', () => {
    // A scale-up from one instance: the new replica still in its first sync.
    const syncing = planQuorum([masterAt(0, [link('wait_bgsave', 0)])], one);
    expect(syncing.commands).toEqual([]);
    expect(syncing.waiting).toBe('c-0 takes min-replicas-to-write 1 once 1 replica is in sync with it');
    // Online but silent for longer than the lag Redis counts: not in touch either.
    expect(planQuorum([masterAt(0, [link('online', 11)])], one).commands).toEqual([]);
    expect(args(planQuorum([masterAt(0, [link('online', 1)])], one))).toEqual([
      'c-0: CONFIG SET min-replicas-to-write 1',
    ]);
    // Two wanted, one in touch: not yet; the lag is measured against the lag it is to take.
    const two = { toWrite: 2, maxLag: 30 };
    expect(args(planQuorum([masterAt(0, [link('online', 20), link('send_bulk', 0)])], two))).toEqual([
      'c-0: CONFIG SET min-replicas-max-lag 30',
    ]);
    expect(args(planQuorum([masterAt(0, [link('online', 20), link('online', 0)])], two))).toEqual([
      'c-0: CONFIG SET min-replicas-max-lag 30',
      'c-0: CONFIG SET min-replicas-to-write 2',
    ]);
  });

  it('sets nothing where the server does not answer or its pod goes', () => {
    const { replication: _r, ...silent } = replicaAt(0);
    expect(planQuorum([silent, { ...replicaAt(0), terminating: true }], one)).toEqual({
      commands: [],
      unknown: [],
    });
  });

  it('names a server that answers but whose quorum could not be read: it gets no role until it is', () => {
    const { quorum: _q, ...unread } = replicaAt(0);
    expect(planQuorum([unread, masterAt(1)], one)).toEqual({
      commands: [],
      unknown: ['c-1'],
      waiting: 'the write quorum of c-1 could not be read',
    });
  });
});
