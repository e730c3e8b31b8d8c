import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import { assessHealth, masterBehind, outageWatch, SERVING_MEMORY_MS } from './health.ts';
import type { Instance } from './probe.ts';

const ip = (ordinal: number) => `10.0.0.${ordinal + 10}`;
const master = (ordinal: number, offset: number): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset, replid: 'a', replicas: [] },
});
const replica = (
  ordinal: number,
  offset: number,
  of = 0,
  more: { syncInProgress?: boolean; replid?: string; replid2?: string; linkDownSeconds?: number } = {},
): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: true,
  terminating: false,
  replication: {
    role: 'replica',
    offset,
    masterHost: ip(of),
    masterPort: 6379,
    linkUp: (more.linkDownSeconds ?? 0) === 0,
    syncInProgress: more.syncInProgress ?? false,
    replid: more.replid ?? 'a',
    replid2: more.replid2 ?? '',
    linkDownSeconds: more.linkDownSeconds ?? 0,
  },
});
/** A replica whose master went away: its link is down. */
const cut = (i: Instance): Instance =>
  ({ ...i, replication: { ...i.replication, linkUp: false } }) as Instance;
const down = (ordinal: number): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: false,
  terminating: false,
  error: 'connect ECONNREFUSED',
});
const cluster = (status: NonNullable<RedisCluster['status']>, failover = { enabled: true, after: '5s' }) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'r', namespace: 'ns' },
    spec: { version: '7.0', replicas: 3, failover },
    status,
  }) as unknown as RedisCluster;
const now = new Date('2026-11-23T10:00:10Z');

/**
 * assessHealth as a health replica that has itself watched the outage since the record says it
 * began (its monotonic clock runs with the test's time here).
 */
const assess = (rc: RedisCluster, instances: readonly Instance[], at: Date) => {
  let t = 0;
  const watch = outageWatch(() => t);
  const since = rc.status?.failover?.masterUnreachableSince;
  if (since) {
    t = Date.parse(since);
    assessHealth(rc, instances, new Date(since), watch);
  }
  t = at.getTime();
  return assessHealth(rc, instances, at, watch);
};

describe('assessHealth', () => {
  it('is healthy when the master serves and every replica follows it in sync', () => {
    const a = assess(cluster({ master: 'r-0' }), [master(0, 100), replica(1, 100), replica(2, 90)], now);
    expect(a.healthy).toMatchObject({ status: 'True', reason: 'Replicating' });
    expect(a.masterUnreachableSince).toBeUndefined();
    expect(a.failover).toBeUndefined();
  });

  it('names what is wrong when a replica does not play its part', () => {
    const a = assess(
      cluster({ master: 'r-0' }),
      [master(0, 100), replica(1, 100, 2), replica(2, 90, 0, { syncInProgress: true })],
      now,
    );
    expect(a.healthy).toMatchObject({ status: 'False', reason: 'ReplicaNotFollowing' });
    expect(a.healthy.message).toContain('r-2 is syncing');
  });

  it('starts the failover clock when the master stops answering, and looks again before it runs out', () => {
    const a = assess(cluster({ master: 'r-0' }), [down(0), cut(replica(1, 100)), cut(replica(2, 90))], now);
    expect(a.masterUnreachableSince).toBe(now.toISOString());
    expect(a.failover).toBeUndefined();
    expect(a.healthy).toMatchObject({ status: 'False', reason: 'MasterUnreachable' });
    expect(a.recheckMs).toBe(1000);
  });

  it('promotes the replica with the highest offset once failover.after has passed', () => {
    const a = assess(
      cluster({ master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T10:00:04Z' } }),
      [down(0), cut(replica(1, 90)), cut(replica(2, 100))],
      now,
    );
    expect(a.failover).toEqual({ from: 'r-0', to: 'r-2', reason: 'MasterUnreachable' });
    expect(a.masterUnreachableSince).toBe('2026-11-23T10:00:04Z');
  });

  it('never waits less than the 3 s floor, whatever an older object says (failover.after 0s)', () => {
    const at = (since: string) =>
      assess(
        cluster(
          { master: 'r-0', failover: { masterUnreachableSince: since } },
          { enabled: true, after: '0s' },
        ),
        [down(0), cut(replica(1, 100))],
        now,
      ).failover;
    expect(at('2026-11-23T10:00:08Z')).toBeUndefined(); // lost 2 s ago
    expect(at('2026-11-23T10:00:07Z')?.to).toBe('r-1'); // lost 3 s ago
  });

  it('waits out the rest of failover.after', () => {
    const a = assess(
      cluster({ master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T10:00:06Z' } }),
      [down(0), cut(replica(1, 90)), cut(replica(2, 100))],
      now,
    );
    expect(a.failover).toBeUndefined();
    expect(a.recheckMs).toBe(1000);
    const later = assess(
      cluster({ master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T10:00:05.700Z' } }),
      [down(0), cut(replica(1, 90))],
      now,
    );
    expect(later.recheckMs).toBe(700);
  });

  it('does not fail over when failover is disabled or nobody could take over', () => {
    const off = assess(
      cluster(
        { master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T09:00:00Z' } },
        { enabled: false, after: '5s' },
      ),
      [down(0), cut(replica(1, 90))],
      now,
    );
    expect(off.failover).toBeUndefined();
    expect(off.healthy.message).toContain('automatic failover is disabled');
    // The way out, named: the replica that would be promoted, or why there is none.
    expect(off.healthy.message).toContain('set it to true to promote r-1, or bring r-0 back');
    const offAlone = assess(
      cluster(
        { master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T09:00:00Z' } },
        { enabled: false, after: '5s' },
      ),
      [down(0), cut(replica(1, 5, 0, { syncInProgress: true }))],
      now,
    );
    expect(offAlone.healthy.message).toMatch(
      /no replica could take over without losing data \(r-1 .+\); bring r-0 back$/,
    );
    const alone = assess(
      cluster({ master: 'r-0', failover: { masterUnreachableSince: '2026-11-23T09:00:00Z' } }),
      [down(0), down(1), cut(replica(2, 5, 0, { syncInProgress: true }))],
      now,
    );
    expect(alone.failover).toBeUndefined();
    expect(alone.healthy).toMatchObject({ reason: 'NoSafeCandidate' });
    expect(alone.healthy.message).toContain('no replica can take over');
  });

  it('treats a master that answers as a fenced replica as reconcile’s to fix, not as down', () => {
    const fenced = {
      ...replica(0, 100),
      replication: { ...replica(0, 100).replication!, linkUp: false },
    } as Instance;
    const a = assess(cluster({ master: 'r-0' }), [fenced, cut(replica(1, 100)), cut(replica(2, 100))], now);
    expect(a.masterUnreachableSince).toBeUndefined();
    expect(a.healthy).toMatchObject({ status: 'False', reason: 'MasterNotServing' });
  });
});

describe('the failover clock: measured by the deciding process only', () => {
  const lostAt = (since: string) =>
    cluster({
      master: 'r-0',
      replication: { id: 'a', offset: 100 },
      failover: { masterUnreachableSince: since },
    });
  const lost = [down(0), cut(replica(1, 100, 0, { linkDownSeconds: 2 }))];
  /** A health replica's own clock: `at` ms after its first look. */
  const replicaClock = () => {
    let t = 0;
    const watch = outageWatch(() => t);
    const at = (ms: number) => {
      t = ms;
      return new Date(now.getTime() + ms);
    };
    return { watch, at };
  };

  it('does not fail over on its first look when the record was written by a clock running behind', () => {
    // The writer's clock is a minute behind: by this clock the master has been lost for 60 s.
    const rc = lostAt('2026-11-23T09:59:10Z');
    const c = replicaClock();
    const first = assessHealth(rc, lost, c.at(0), c.watch);
    expect(first.failover).toBeUndefined();
    expect(first.masterUnreachableSince).toBe('2026-11-23T09:59:10Z'); // the record is kept
    expect(first.recheckMs).toBe(1000);
    expect(assessHealth(rc, lost, c.at(4900), c.watch).failover).toBeUndefined();
    expect(assessHealth(rc, lost, c.at(5000), c.watch).failover?.to).toBe('r-1');
  });

  it('is not held back by a record written by a clock running ahead', () => {
    // The writer's clock is a minute ahead: by this clock the outage starts in the future.
    const rc = lostAt('2026-11-23T10:01:10Z');
    const c = replicaClock();
    expect(assessHealth(rc, lost, c.at(0), c.watch).failover).toBeUndefined();
    expect(assessHealth(rc, lost, c.at(5000), c.watch).failover?.to).toBe('r-1');
  });

  it('starts over for a new outage, and after seeing the master serve', () => {
    const c = replicaClock();
    assessHealth(lostAt('2026-11-23T10:00:00Z'), lost, c.at(0), c.watch);
    // Another outage in the record (the first one ended, seen by another replica): from zero.
    expect(
      assessHealth(lostAt('2026-11-23T10:00:30Z'), lost, c.at(30_000), c.watch).failover,
    ).toBeUndefined();
    expect(assessHealth(lostAt('2026-11-23T10:00:30Z'), lost, c.at(35_000), c.watch).failover?.to).toBe(
      'r-1',
    );
    // The master served in between, though the record still names the old outage: from zero.
    const serving = [master(0, 100), replica(1, 100)];
    assessHealth(lostAt('2026-11-23T10:00:30Z'), serving, c.at(36_000), c.watch);
    expect(
      assessHealth(lostAt('2026-11-23T10:00:30Z'), lost, c.at(37_000), c.watch).failover,
    ).toBeUndefined();
  });

  it('forgets the oldest outage first when it watches more clusters than its bound', () => {
    let t = 0;
    const watch = outageWatch(() => t, 2);
    watch.observe('a', 'a-0', 's');
    watch.observe('b', 'b-0', 's');
    watch.observe('c', 'c-0', 's');
    t = 10_000;
    expect(watch.observe('c', 'c-0', 's')).toBe(10_000);
    expect(watch.observe('a', 'a-0', 's')).toBe(0);
  });

  it('judges candidates from when it last saw the master serve, however late its first look at the outage', () => {
    // Seen serving at 10:00:00; killed at 10:00:01 (the replicas' links drop then); the first look
    // comes 9 s later (a late tick, a busy lock). Measured from that first look, the replicas lost
    // their master 8 s "before the master was lost" and the cluster would stay without one for good.
    const c = replicaClock();
    const serving = cluster({ master: 'r-0', replication: { id: 'a', offset: 100 } });
    assessHealth(serving, [master(0, 100), replica(1, 100), replica(2, 100)], c.at(0), c.watch);
    const lostLate = (s: number) => [down(0), cut(replica(1, 100, 0, { linkDownSeconds: s })), stale];
    const stale = replica(2, 100, 0, { linkDownSeconds: 3600 }); // down long before it was seen serving
    const first = assessHealth(serving, lostLate(8), c.at(9_000), c.watch);
    expect(first.healthy).toMatchObject({ reason: 'MasterUnreachable' });
    expect(first.healthy.message).toContain('r-1 takes over');
    // The record dates the outage from the last look at it serving, for the other health replicas.
    expect(first.masterUnreachableSince).toBe('2026-11-23T10:00:10.000Z');
    const rc = cluster({
      ...serving.status,
      failover: { masterUnreachableSince: first.masterUnreachableSince },
    });
    expect(assessHealth(rc, lostLate(12), c.at(13_000), c.watch).failover).toBeUndefined();
    expect(assessHealth(rc, lostLate(13), c.at(14_000), c.watch).failover).toMatchObject({ to: 'r-1' });
    // A process that never saw it serve still refuses a replica cut off before the outage it records.
    const other = replicaClock();
    const refused = assessHealth(rc, [down(0), stale], other.at(14_000), other.watch);
    expect(refused.healthy).toMatchObject({ reason: 'NoSafeCandidate' });
  });

  it('forgets a sight of the master serving after SERVING_MEMORY_MS: a process that stopped watching the cluster dates no outage from then', () => {
    // This process saw r-0 serve, then the cluster went to another health replica for days, and
    // came back as r-0 died. r-1's link has been down for a day: it did not follow r-0 to the end.
    const c = replicaClock();
    const serving = cluster({ master: 'r-0', replication: { id: 'a', offset: 100 } });
    assessHealth(serving, [master(0, 100), replica(1, 100), replica(2, 100)], c.at(0), c.watch);
    const days = 4 * 86_400_000;
    const lost = [down(0), cut(replica(1, 90, 0, { linkDownSeconds: 86_400 }))];
    const a = assessHealth(serving, lost, c.at(days), c.watch);
    expect(a.masterUnreachableSince).toBe(c.at(days).toISOString());
    expect(a.healthy).toMatchObject({ reason: 'NoSafeCandidate' });
    expect(assessHealth(serving, lost, c.at(days + 10_000), c.watch).failover).toBeUndefined();
    // Within the bound, a late look still dates the outage from the sight of it serving.
    const d = replicaClock();
    assessHealth(serving, [master(0, 100), replica(1, 100), replica(2, 100)], d.at(0), d.watch);
    const late = assessHealth(serving, [down(0)], d.at(SERVING_MEMORY_MS), d.watch);
    expect(late.masterUnreachableSince).toBe(d.at(0).toISOString());
    // An 11-minute outage of the bus kept every health run away as the master died (at 30 s):
    // the replicas that followed it to the end still qualify, and the best one takes over.
    const e = replicaClock();
    assessHealth(serving, [master(0, 100), replica(1, 100), replica(2, 100)], e.at(0), e.watch);
    const cutFor = (s: number) => [
      down(0),
      cut(replica(1, 100, 0, { linkDownSeconds: s })),
      cut(replica(2, 90, 0, { linkDownSeconds: s })),
    ];
    assessHealth(serving, cutFor(630), e.at(660_000), e.watch);
    expect(assessHealth(serving, cutFor(636), e.at(666_000), e.watch).failover).toEqual({
      from: 'r-0',
      to: 'r-1',
      reason: 'MasterUnreachable',
    });
  });
});

describe('promotion: only a replica that holds the data', () => {
  const lost = {
    master: 'r-0',
    replication: { id: 'a', offset: 100 },
    failover: { masterUnreachableSince: '2026-11-23T10:00:00Z' },
  };

  it('breaks an offset tie by the lowest ordinal, so every assessor picks the same', () => {
    const a = assess(cluster(lost), [down(0), cut(replica(2, 100)), cut(replica(1, 100))], now);
    expect(a.failover?.to).toBe('r-1');
  });

  it('promotes no one when the only replica that answers never synced (NoSafeCandidate)', () => {
    // r-1 holds the data but is down; r-2 was added by a scale-up and never synced from the master.
    const empty = replica(2, 1, 0, { replid: 'f'.repeat(40), linkDownSeconds: Number.POSITIVE_INFINITY });
    const a = assess(cluster(lost), [down(0), down(1), empty], now);
    expect(a.failover).toBeUndefined();
    expect(a.healthy).toMatchObject({ status: 'False', reason: 'NoSafeCandidate' });
    expect(a.healthy.message).toContain('r-2 holds data of another replication history');
  });

  it('refuses a replica whose link went down before the master was lost, whatever its offset', () => {
    const stale = replica(1, 500, 0, { linkDownSeconds: 3600 });
    const a = assess(cluster(lost), [down(0), stale, cut(replica(2, 90, 0, { linkDownSeconds: 9 }))], now);
    expect(a.failover?.to).toBe('r-2');
  });

  it('refuses a replica of another replication history, accepts one that continued it (replid2)', () => {
    const foreign = replica(1, 900, 0, { replid: 'b', linkDownSeconds: 2 });
    const continued = replica(2, 90, 0, { replid: 'c', replid2: 'a', linkDownSeconds: 2 });
    const a = assess(cluster(lost), [down(0), foreign, continued], now);
    expect(a.failover?.to).toBe('r-2');
  });

  it('fails over from a master that came back with less data than a replica, once the clock ran out', () => {
    const fenced = {
      ...replica(0, 40),
      replication: { ...replica(0, 40).replication!, linkUp: false, masterHost: '127.0.0.1' },
    } as Instance;
    const a = assess(cluster(lost), [fenced, cut(replica(1, 100, 0, { linkDownSeconds: 8 }))], now);
    expect(a.failover).toEqual({ from: 'r-0', to: 'r-1', reason: 'MasterBehind' });
    // With failover off, the master behind is not offered as a way out: it would stay fenced.
    const off = assess(
      cluster(lost, { enabled: false, after: '5s' }),
      [fenced, cut(replica(1, 100, 0, { linkDownSeconds: 8 }))],
      now,
    );
    expect(off.failover).toBeUndefined();
    expect(off.healthy).toMatchObject({ reason: 'MasterBehind' });
    expect(off.healthy.message).toMatch(
      /automatic failover is disabled \(spec.failover.enabled\): set it to true to promote r-1$/,
    );
  });

  it('counts only instances of the cluster’s history as ahead of a fenced master', () => {
    const fenced = {
      ...replica(0, 100),
      replication: { ...replica(0, 100).replication!, linkUp: false, masterHost: '127.0.0.1' },
    } as Instance;
    // An old volume of another history, far "ahead" by offset: it says nothing about this data.
    const foreign = replica(1, 900, 0, { replid: 'f'.repeat(40), linkDownSeconds: Number.POSITIVE_INFINITY });
    const whole = assess(
      cluster({ master: 'r-0', replication: { id: 'a', offset: 100 } }),
      [fenced, foreign, cut(replica(2, 100, 0, { linkDownSeconds: 8 }))],
      now,
    );
    expect(whole.failover).toBeUndefined();
    expect(whole.masterUnreachableSince).toBeUndefined();
    expect(whole.healthy).toMatchObject({ reason: 'MasterNotServing' });
    expect(masterBehind([fenced, foreign], fenced, { id: 'a', offset: 100 })).toBeUndefined();
    // One that continued the history (an earlier id in status.replication.previous) does count.
    const continued = replica(1, 900, 0, { replid: 'c', replid2: 'b', linkDownSeconds: 8 });
    expect(masterBehind([fenced, continued], fenced, { id: 'a', offset: 100, previous: ['b'] })?.pod).toBe(
      'r-1',
    );
  });

  it('judges a fenced master with no keys by its keys only where its id and offset do not place it, and only against this data', () => {
    const history = { id: 'a', offset: 1000 };
    const fencedAt = (offset: number, replid = 'a') =>
      ({
        ...replica(0, offset),
        keys: 0,
        replication: { ...replica(0, offset).replication!, replid, linkUp: false, masterHost: '127.0.0.1' },
      }) as Instance;
    const withKeys = (i: Instance) => ({ ...i, keys: 5 }) as Instance;
    // Placed in the history (an RDB at offset 1000, a drained queue): a replica further back that
    // still holds keys is not ahead of it; promoting it would bring deleted keys back.
    const older = withKeys(replica(1, 900, 0, { linkDownSeconds: 4 }));
    expect(masterBehind([fencedAt(1000), older], fencedAt(1000), history)).toBeUndefined();
    // Not placed (a restart from its append-only file alone: offset 1 of a fresh id): the keys
    // of an instance of this history say it lost them.
    const fresh = fencedAt(1, 'e'.repeat(40));
    expect(masterBehind([fresh, older], fresh, history)?.pod).toBe('r-1');
    // ...but not an old volume's of another history, which holds no part of this data.
    const foreign = withKeys(replica(1, 900, 0, { replid: 'f'.repeat(40), linkDownSeconds: 4 }));
    expect(masterBehind([fresh, foreign], fresh, history)).toBeUndefined();
  });

  it('after a restart of every instance, promotes a replica of the history that holds more than the fenced master', () => {
    const fenced = {
      ...replica(0, 40),
      replication: { ...replica(0, 40).replication!, linkUp: false, masterHost: '127.0.0.1' },
    } as Instance;
    const restarted = replica(1, 100, 0, { linkDownSeconds: Number.POSITIVE_INFINITY });
    const behindToo = replica(2, 30, 0, { linkDownSeconds: Number.POSITIVE_INFINITY });
    const a = assess(cluster(lost), [fenced, restarted, behindToo], now);
    expect(a.failover).toEqual({ from: 'r-0', to: 'r-1', reason: 'MasterBehind' });
  });

  it('never promotes a replica whose link to the master is still up: the master lives, cut off only from Tideway', () => {
    const a = assess(cluster(lost), [down(0), replica(1, 100), replica(2, 100)], now);
    expect(a.failover).toBeUndefined();
    // Said as what it is: the master lives (before: NoSafeCandidate, naming r-1's link).
    expect(a.healthy).toMatchObject({ reason: 'MasterCutOff' });
    expect(a.healthy.message).toContain('but r-1 still replicates from it with its link up');
  });

  it('promotes no one while another replica still replicates from the master with its link up, however long the outage: the master lives', () => {
    // Tideway and r-1 are cut off from r-0; r-2 is not, and r-0 goes on taking writes through it.
    const partitioned = [down(0), replica(1, 90, 0, { linkDownSeconds: 6 }), replica(2, 120)];
    const a = assess(cluster(lost), partitioned, now);
    expect(a.failover).toBeUndefined();
    expect(a.healthy).toMatchObject({ status: 'False', reason: 'MasterCutOff' });
    expect(a.healthy.message).toMatch(/; but r-2 still replicates from it with its link up: it lives/);
    expect(a.masterUnreachableSince).toBe(lost.failover?.masterUnreachableSince);
    // Once that link is down too, the master is lost: the one that followed it longest takes over.
    const gone = [
      down(0),
      replica(1, 90, 0, { linkDownSeconds: 6 }),
      replica(2, 120, 0, { linkDownSeconds: 1 }),
    ];
    expect(assess(cluster(lost), gone, now).failover).toEqual({
      from: 'r-0',
      to: 'r-2',
      reason: 'MasterUnreachable',
    });
    // A link up to another address says nothing of the master (r-2 follows r-1 here).
    const elsewhere = [down(0), replica(1, 90, 0, { linkDownSeconds: 6 }), replica(2, 80, 1)];
    expect(assess(cluster(lost), elsewhere, now).failover).toEqual({
      from: 'r-0',
      to: 'r-1',
      reason: 'MasterUnreachable',
    });
  });

  it('records the history of a serving master', () => {
    const a = assess(cluster({ master: 'r-0' }), [master(0, 100), replica(1, 100), replica(2, 100)], now);
    expect(a.history).toEqual({ id: 'a', offset: 100 });
  });
});
