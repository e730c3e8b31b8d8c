import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import type { Auth } from '../../shared/rediscluster/auth.ts';
import type { FailoverResult } from '../../shared/rediscluster/failover.ts';
import { fakeClusterStore } from '../../shared/rediscluster/fixture.ts';
import { outageWatch } from '../../shared/rediscluster/health.ts';
import type { LoadedCluster } from '../../shared/rediscluster/load.ts';
import type { Instance } from '../../shared/rediscluster/probe.ts';
import {
  markedRestore,
  RESTORING_HOLD_MS,
  restoringMessageFor,
} from '../../shared/rediscluster/restoring.ts';
import { done, retryAfter } from '../../shared/runtime/handler.ts';
import type { HealthPorts } from './ports.ts';
import { runHealth } from './run.ts';

type Status = NonNullable<RedisCluster['status']>;

const ip = (ordinal: number) => `10.0.0.${ordinal + 10}`;
const master = (ordinal: number, offset: number, replid = 'a'): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset, replid, replicas: [] },
});
const replica = (ordinal: number, offset: number, of = 0): Instance => ({
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
    linkUp: true,
    syncInProgress: false,
    replid: 'a',
    replid2: '',
    linkDownSeconds: 0,
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

const t0 = Date.parse('2026-11-23T10:00:00Z');
const at = (ms: number) => new Date(t0 + ms);
/** The master is down; r-2 holds the most data of the replicas that followed it to the end. */
const lost = () => [down(0), cut(replica(1, 90)), cut(replica(2, 100))];
/** After r-2 was promoted. */
const promoted = () => [down(0), replica(1, 90, 2), master(2, 100, 'b')];
const serving = () => [master(0, 100), replica(1, 100), replica(2, 90)];

/** The cluster as the API server holds it, every status written kept in `writes`. */
const apiServer = (status: Status, meta: Partial<RedisCluster['metadata']> = {}) => {
  const writes: Status[] = [];
  const api = fakeClusterStore(status, {
    meta,
    spec: { failover: { enabled: true, after: '5s' } },
    onWrite: (s) => writes.push(s),
  });
  return { ...api, writes };
};

/**
 * Health's outside world in memory. Each probe answers with the next of `probes` (the last one
 * repeats); failOver does what the real one does to the record — master becomes decision.to by
 * compare-and-set on decision.from — unless told it lost the race.
 */
const world = (probes: Instance[][], o: { lostRace?: boolean; auth?: Auth; writes?: () => number } = {}) => {
  const calls = {
    probes: [] as { cluster: string; passwords: readonly string[] }[],
    failOver: [] as Parameters<HealthPorts['failOver']>[0][],
    rotations: [] as { auth: Auth; source: string }[],
    /** Restores looked at, with how many status writes had been made by then. */
    looks: [] as { name: string | undefined; source: string; writesBefore: number }[],
  };
  const ports: HealthPorts = {
    readAuth: async () => o.auth ?? { desired: 'pw', applied: 'pw' },
    askForPasswordRotation: async (_rc, auth, source) => {
      calls.rotations.push({ auth, source });
      return auth.desired !== auth.applied;
    },
    lookAtMarkedRestore: async (rc, source) => {
      const name = markedRestore(rc);
      calls.looks.push({ name, source, writesBefore: o.writes?.() ?? 0 });
      return name;
    },
    listPods: async () => [] as V1Pod[],
    probeInstances: async (cluster, _pods, passwords) => {
      calls.probes.push({ cluster, passwords });
      return structuredClone(probes[Math.min(calls.probes.length, probes.length) - 1] ?? []);
    },
    failOver: async (x): Promise<FailoverResult> => {
      calls.failOver.push(x);
      if (o.lostRace) return { done: false, master: 'r-1' };
      const d = x.decision;
      await x.cluster.writeStatus((s) =>
        s.master !== d.from
          ? undefined
          : { ...s, master: d.to, failover: { count: 1, last: { ...d, at: x.now.toISOString() } } },
      );
      return { done: true, at: x.now.toISOString() };
    },
    backupFreshness: async () => ({}),
  };
  return { ports, calls };
};

/** A health process: its wall clock and its monotonic failover clock move together. */
const healthProcess = () => {
  let ms = 0;
  const outages = outageWatch(() => ms);
  let fenced = 0;
  const ctx = { clock: () => at(ms), fence: () => void fenced++ };
  return {
    outages,
    fenced: () => fenced,
    run: (loaded: LoadedCluster, ports: HealthPorts, atMs: number) => {
      ms = atMs;
      return runHealth(loaded, ctx, ports, { source: 'watcher', outages });
    },
  };
};

const condition = (s: Status | undefined, type: string) => s?.conditions?.find((c) => c.type === type);

describe('runHealth', () => {
  it.each([
    ['being deleted', { master: 'r-0' }, { deletionTimestamp: '2026-11-23T09:00:00Z' }],
    ['without the finalizer (reconcile has not taken it on)', { master: 'r-0' }, { finalizers: [] }],
    ['without a master yet', {}, {}],
  ])('leaves a cluster %s alone: nothing read, probed or written', async (_, status, meta) => {
    const api = apiServer(status as Status, meta);
    const { ports, calls } = world([serving()]);
    expect(await healthProcess().run(api.load(), ports, 0)).toEqual(done);
    expect(calls.probes).toHaveLength(0);
    expect(calls.rotations).toHaveLength(0);
    expect(calls.looks).toHaveLength(0);
    expect(api.writes).toHaveLength(0);
  });

  it('writes Healthy True when the master serves and the replicas follow it in sync, and clears an old outage', async () => {
    const api = apiServer({ master: 'r-0', failover: { masterUnreachableSince: at(-60_000).toISOString() } });
    const { ports, calls } = world([serving()]);
    const p = healthProcess();
    expect(await p.run(api.load(), ports, 0)).toEqual(done);
    expect(calls.failOver).toHaveLength(0);
    expect(api.writes).toHaveLength(1);
    const s = api.stored.status;
    expect(condition(s, 'Healthy')).toMatchObject({
      status: 'True',
      reason: 'Replicating',
      observedGeneration: 2,
    });
    expect(condition(s, 'Ready')).toMatchObject({ status: 'True', reason: 'AllInstancesReady' });
    expect(s).toMatchObject({
      master: 'r-0',
      phase: 'Ready',
      ready: '3/3',
      replication: { id: 'a', offset: 100 },
    });
    expect(s.failover).toBeUndefined();
    expect(p.fenced()).toBe(1);
  });

  it('probes with the recorded password first and asks for a rotation with the event source', async () => {
    const api = apiServer({ master: 'r-0' });
    const auth = { desired: 'new', applied: 'old', previous: 'older' };
    const { ports, calls } = world([serving()], { auth });
    await healthProcess().run(api.load(), ports, 0);
    expect(calls.rotations).toEqual([{ auth, source: 'watcher' }]);
    expect(calls.probes).toEqual([{ cluster: 'r', passwords: ['old', 'new', 'older'] }]);
  });

  it('starts the failover clock when the master is unreachable and looks again before it runs out', async () => {
    const api = apiServer({ master: 'r-0' });
    const { ports, calls } = world([lost()]);
    const p = healthProcess();
    expect(await p.run(api.load(), ports, 0)).toEqual(retryAfter(1000, 'MasterUnreachable'));
    expect(api.stored.status.failover).toEqual({ masterUnreachableSince: at(0).toISOString() });
    expect(condition(api.stored.status, 'Healthy')).toMatchObject({
      status: 'False',
      reason: 'MasterUnreachable',
    });
    // 4.3 s into the outage of 5 s: the rest, from the same record.
    expect(await p.run(api.load(), ports, 4300)).toEqual(retryAfter(700, 'MasterUnreachable'));
    expect(api.stored.status.failover).toEqual({ masterUnreachableSince: at(0).toISOString() });
    expect(api.stored.status.master).toBe('r-0');
    expect(calls.failOver).toHaveLength(0);
  });

  it('fails over once the clock runs out: promotes the most advanced replica and records it', async () => {
    const api = apiServer({ master: 'r-0' });
    const { ports, calls } = world([lost(), lost(), promoted()], {
      auth: { desired: 'pw', applied: 'applied' },
    });
    const p = healthProcess();
    await p.run(api.load(), ports, 0);
    const loaded = api.load();
    expect(await p.run(loaded, ports, 5000)).toEqual(retryAfter(1000, 'FailedOver'));
    expect(calls.failOver).toHaveLength(1);
    expect(calls.failOver[0]).toMatchObject({
      cluster: loaded,
      decision: { from: 'r-0', to: 'r-2', reason: 'MasterUnreachable' },
      password: 'applied',
      now: at(5000),
      source: 'watcher',
    });
    expect(calls.failOver[0]?.instances.map((i) => i.pod)).toEqual(['r-0', 'r-1', 'r-2']);
    expect(calls.probes).toHaveLength(3); // again after the promotion, to report the new topology
    const s = api.stored.status;
    expect(s.master).toBe('r-2');
    expect(condition(s, 'Healthy')).toMatchObject({
      status: 'False',
      reason: 'FailedOver',
      message: 'master r-0 was unreachable for 5s; r-2 promoted',
    });
    expect(s.failover).toEqual({
      count: 1,
      last: { from: 'r-0', to: 'r-2', reason: 'MasterUnreachable', at: at(5000).toISOString() },
    });
    expect(s.replication).toMatchObject({ id: 'b', offset: 100 });
    expect(s.nodes?.find((n) => n.pod === 'r-2')).toMatchObject({ role: 'master', ready: true });
  });

  it('never fails over while a restore runs, and says so', async () => {
    const restoring = {
      type: 'Restoring',
      status: 'True',
      reason: 'Loading',
      message: 'loading backup b1',
      lastTransitionTime: at(-60_000).toISOString(),
    };
    const api = apiServer({ master: 'r-0', conditions: [restoring] } as Status);
    const { ports, calls } = world([lost()]);
    const p = healthProcess();
    await p.run(api.load(), ports, 0);
    expect(await p.run(api.load(), ports, 5000)).toEqual(done);
    expect(calls.failOver).toHaveLength(0);
    expect(api.stored.status.master).toBe('r-0');
    const healthy = condition(api.stored.status, 'Healthy');
    expect(healthy).toMatchObject({ status: 'False', reason: 'Restoring' });
    expect(healthy?.message).toMatch(/^no failover while a restore runs \(loading backup b1\); master r-0 /);
    // The outage stays on record: once the restore is over, the failover goes ahead at once.
    expect(api.stored.status.failover).toEqual({ masterUnreachableSince: at(0).toISOString() });
  });

  it('looks at the Restore its cluster’s Restoring mark names on every run, after the status is written, however old the mark', async () => {
    // Given up mid-load, the Restore left the master following its feed, which is gone: the
    // master answers as a replica. Only the Restore's own run settles that.
    const followsFeed: Instance = {
      ...replica(0, 100),
      replication: { ...(replica(0, 100).replication as object), masterHost: '10.0.9.9', linkUp: false },
    } as Instance;
    for (const age of [60_000, RESTORING_HOLD_MS + 60_000]) {
      const api = apiServer({
        master: 'r-0',
        conditions: [
          {
            type: 'Restoring',
            status: 'True',
            reason: 'Restoring',
            message: `${restoringMessageFor('r1')}loads Backup b1 into r-0`,
            lastTransitionTime: at(-age).toISOString(),
          },
        ],
      } as Status);
      const { ports, calls } = world([[followsFeed, replica(1, 100), replica(2, 100)]], {
        writes: () => api.writes.length,
      });
      const p = healthProcess();
      await p.run(api.load(), ports, 0);
      await p.run(api.load(), ports, 2000);
      expect(calls.looks).toEqual([
        { name: 'r1', source: 'watcher', writesBefore: 1 },
        // The second run found the status as it would write it: nothing written, still a look.
        { name: 'r1', source: 'watcher', writesBefore: 1 },
      ]);
    }
    // A cluster with no mark: no look.
    const api = apiServer({ master: 'r-0' });
    const { ports, calls } = world([serving()]);
    await healthProcess().run(api.load(), ports, 0);
    expect(calls.looks).toEqual([{ name: undefined, source: 'watcher', writesBefore: 0 }]);
  });

  it('assesses again when another run changed the master first (lost compare-and-set): nothing written', async () => {
    const api = apiServer({ master: 'r-0' });
    const { ports, calls } = world([lost()], { lostRace: true });
    const p = healthProcess();
    await p.run(api.load(), ports, 0);
    const before = structuredClone(api.stored.status);
    const writes = api.writes.length;
    expect(await p.run(api.load(), ports, 5000)).toEqual(retryAfter(200, 'MasterChanged'));
    expect(calls.failOver).toHaveLength(1);
    expect(calls.probes).toHaveLength(2); // no probe after the lost race
    expect(api.writes).toHaveLength(writes);
    expect(api.stored.status).toEqual(before);
  });

  it('never writes over a master recorded meanwhile (a switchover by reconcile)', async () => {
    const api = apiServer({ master: 'r-0' });
    const { ports } = world([serving()]);
    const p = healthProcess();
    const loaded = api.load(); // read with r-0 as the master
    api.stored.status = { master: 'r-1' };
    expect(await p.run(loaded, ports, 0)).toEqual(done);
    expect(api.writes).toHaveLength(0);
    expect(api.stored.status).toEqual({ master: 'r-1' });
    expect(p.fenced()).toBe(0);
  });
});
