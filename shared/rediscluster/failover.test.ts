import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import type { RedisClient } from '../redis/client.ts';
import { LockLostError, TemporaryError } from '../runtime/handler.ts';
import type { Logger } from '../runtime/logger.ts';
import { type FailoverPorts, failOver } from './failover.ts';
import { fakeClusterStore } from './fixture.ts';
import type { LoadedCluster } from './load.ts';
import { fromInfo, type Instance } from './probe.ts';

type Status = NonNullable<RedisCluster['status']>;

const OLD = 'a'.repeat(40);
const NEW = 'b'.repeat(40);
const ZERO = '0'.repeat(40);
const ipOf = (ordinal: number) => `10.0.0.${ordinal + 10}`;
const podAt = (ip: string) => `r-${Number(ip.split('.')[3]) - 10}`;

/** INFO of a replica cut off from the lost master r-0: its link down, its offset standing still. */
const replicaInfo = (offset: number, runId: string) =>
  [
    '# Server',
    `run_id:${runId}`,
    '# Replication',
    'role:slave',
    `master_host:${ipOf(0)}`,
    'master_port:6379',
    'master_link_status:down',
    'master_link_down_since_seconds:7',
    'master_sync_in_progress:0',
    `slave_repl_offset:${offset}`,
    `master_replid:${OLD}`,
    `master_replid2:${ZERO}`,
  ].join('\r\n');
/** INFO replication of the target once REPLICAOF NO ONE made it a master (a new history). */
const promotedInfo = [
  '# Replication',
  'role:master',
  `master_replid:${NEW}`,
  `master_replid2:${OLD}`,
  'master_repl_offset:100',
].join('\r\n');

const replica = (
  ordinal: number,
  offset: number,
  labelledRole: Instance['labelledRole'] = 'replica',
): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ipOf(ordinal),
  podReady: true,
  labelledRole,
  terminating: false,
  ...fromInfo(replicaInfo(offset, `run-${ordinal}`)),
});

/**
 * The master r-0 is lost; r-1 (offset 100) is promoted. r-2 and r-3 follow it afterwards, and r-3
 * still carries a master label (left behind): both labelled pods leave the master Service first.
 */
const instances: Instance[] = [
  {
    pod: 'r-0',
    ordinal: 0,
    ip: ipOf(0),
    podReady: false,
    labelledRole: 'master',
    terminating: false,
    error: 'down',
  },
  replica(1, 100),
  replica(2, 90),
  replica(3, 80, 'master'),
];
const decision = { from: 'r-0', to: 'r-1', reason: 'MasterUnreachable' };

/** Entries of the trace that change something: a label, the status, a server's role. */
const isMutation = (entry: string) => /^(label |status write|redis [^:]+: (?!INFO))/.test(entry);
const isCheck = (entry: string) => entry.startsWith('check');

const changes = (before: Status, after: Status) =>
  [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => JSON.stringify(before[k as keyof Status]) !== JSON.stringify(after[k as keyof Status]))
    .map((k) => (k === 'master' ? `master=${after.master}` : k))
    .join(' ');

type Scenario = {
  /** Removing r-0's label is refused (a 500 from the API server). */
  unlabelFails?: boolean;
  /** On the connection that promotes it, r-1 is another process, or does not answer. */
  target?: 'restarted' | 'unreachable';
  /** status.master as the API server holds it (another promotion got there first). */
  recorded?: string;
  /** The instances as probed, when not the default four. */
  instances?: Instance[];
};

/**
 * One failover against fakes that write every call into `trace`, in order: lease checks, status
 * reads and writes, labels, connections and commands. The lease lapses at the `atCheck`-th check,
 * or while the `atStep`-th call to the outside is in flight (a stall past the lease); either way
 * every check from then on fails, as a lost lock stays lost.
 */
const run = async (s: Scenario = {}, lapse: { atCheck?: number; atStep?: number } = {}) => {
  const probed = s.instances ?? instances;
  const trace: string[] = [];
  const lease = { lost: false, checks: 0, steps: 0 };
  const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
  const step = (entry: string) => {
    trace.push(entry);
    lease.steps += 1;
    if (lease.steps === lapse.atStep) lease.lost = true;
  };
  const fence = () => {
    lease.checks += 1;
    if (lease.checks === lapse.atCheck) lease.lost = true;
    trace.push(lease.lost ? 'check: lock lost' : 'check');
    if (lease.lost) throw new LockLostError('the lock on ns/r was lost');
  };

  const store = fakeClusterStore({
    master: s.recorded ?? 'r-0',
    replication: { id: OLD, offset: 100 },
    failover: {
      count: 1,
      last: { from: 'r-2', to: 'r-0', at: '2026-01-01T00:00:00.000Z', reason: 'MasterUnreachable' },
    },
  });
  const loaded = store.load();
  const cluster: LoadedCluster = {
    ...loaded,
    writeStatus: async (mutate) => {
      step('status read');
      await tick();
      const before = structuredClone(store.stored.status);
      const written = await loaded.writeStatus(mutate);
      const what = changes(before, store.stored.status);
      if (what) {
        step(`status write: ${what}`);
        await tick();
      }
      return written;
    },
  };

  const connections = new Map<string, number>();
  const ports: FailoverPorts = {
    labelPod: async (_namespace, pod, role) => {
      step(`label ${pod}: ${role ?? '-'}`);
      await tick();
      if (s.unlabelFails && pod === 'r-0' && role === null)
        throw Object.assign(new Error('HTTP-Code: 500'), {
          code: 500,
          body: '{"message":"etcdserver: timeout"}',
        });
    },
    onInstance: async (ip, _password, fn) => {
      const pod = podAt(ip);
      const nth = (connections.get(pod) ?? 0) + 1;
      connections.set(pod, nth);
      step(`connect ${pod}`);
      await tick();
      if (pod === 'r-1' && nth === 2 && s.target === 'unreachable')
        throw new Error(`connect ECONNREFUSED ${ip}:6379`);
      let master = false;
      const client: RedisClient = {
        command: async (...args) => {
          const cmd = args.join(' ');
          step(`redis ${pod}: ${cmd}`);
          await tick();
          if (cmd === 'REPLICAOF NO ONE') master = true;
          if (cmd === 'INFO replication' && master) return promotedInfo;
          if (cmd === 'INFO') {
            const runId =
              pod === 'r-1' && nth === 2 && s.target === 'restarted' ? 'run-1b' : `run-${pod.slice(2)}`;
            return replicaInfo(Number(probed.find((i) => i.pod === pod)?.replication?.offset), runId);
          }
          return 'OK';
        },
        close: () => {},
        [Symbol.dispose]: () => {},
      };
      return fn(client);
    },
  };

  const log: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => log };
  const outcome = await failOver({
    ports,
    cluster,
    instances: probed,
    password: 'secret',
    decision,
    now: new Date('2026-11-23T10:00:00Z'),
    log,
    recorder: {
      record: async (e) => {
        step(`event ${e.reason}`);
      },
    },
    publisher: {
      publish: async (e) => {
        step(`publish ${e.type}`);
        return { duplicate: false, seq: 1 };
      },
    },
    source: 'test',
    fence,
  }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  return { trace, outcome, status: store.stored.status };
};

/** Where the k-th call to the outside (not a lease check) is in the trace. */
const nthStep = (trace: string[], k: number) => {
  let seen = 0;
  return trace.findIndex((e) => !isCheck(e) && ++seen === k);
};

/** Everything the run changed after the entry at `index`. */
const mutationsAfter = (trace: string[], index: number) => trace.slice(index + 1).filter(isMutation);

describe('failOver, lease held throughout', () => {
  it('takes every master label off, then records r-1 by compare-and-set, then promotes and labels it, then repoints the others', async () => {
    const { trace, outcome, status } = await run();
    expect(outcome).toEqual({ result: { done: true, at: '2026-11-23T10:00:00.000Z' } });
    expect(trace).toEqual([
      'connect r-1',
      'redis r-1: INFO',
      'check',
      'label r-0: -',
      'check',
      'label r-3: -',
      'status read',
      'check',
      'status write: master=r-1 failover',
      'check',
      'connect r-1',
      'redis r-1: INFO',
      'check',
      'redis r-1: REPLICAOF NO ONE',
      'redis r-1: INFO replication',
      'status read',
      'check',
      'status write: replication',
      'check',
      'label r-1: master',
      'check',
      'connect r-2',
      'check',
      'connect r-3',
      'check',
      'redis r-2: REPLICAOF 10.0.0.11 6379',
      'check',
      'redis r-3: REPLICAOF 10.0.0.11 6379',
      'check',
      'label r-2: replica',
      'check',
      'label r-3: replica',
      'event Failover',
      'publish dev.tideway.cluster.failover',
    ]);
    expect(status).toMatchObject({
      master: 'r-1',
      failover: { count: 2, last: { from: 'r-0', to: 'r-1', reason: 'MasterUnreachable' } },
      replication: { id: NEW, offset: 100, previous: [OLD] },
    });
  });

  it('leaves a replica alone whose data is of another replication history: following would wipe it', async () => {
    // r-2 came back on an old volume: 5000 keys of another history, at a lower offset than r-1.
    const foreign: Instance = {
      ...replica(2, 90),
      keys: 5000,
      replication: {
        ...(replica(2, 90).replication as object),
        replid: 'c'.repeat(40),
      } as Instance['replication'],
    };
    const { trace, outcome } = await run({
      instances: [instances[0]!, replica(1, 100), foreign, replica(3, 80)],
    });
    expect(outcome).toMatchObject({ result: { done: true } });
    expect(trace).toContain('redis r-3: REPLICAOF 10.0.0.11 6379');
    expect(trace.filter((e) => e.startsWith('redis r-2') || e === 'connect r-2')).toEqual([]);
  });

  it('a refused unlabel stops the promotion: the record, the servers and the other labels stay as they are', async () => {
    const { trace, outcome, status } = await run({ unlabelFails: true });
    expect(outcome).toEqual({ error: expect.any(TemporaryError) });
    expect((outcome as { error: TemporaryError }).error.reason).toBe('FencingFailed');
    expect(trace).toEqual([
      'connect r-1',
      'redis r-1: INFO',
      'check',
      'label r-0: -',
      'status read',
      'check',
      'status write: conditions',
    ]);
    expect(status.master).toBe('r-0');
    expect(status.conditions).toMatchObject([{ type: 'Healthy', status: 'False', reason: 'FencingFailed' }]);
  });

  it('writes status.master only if it is still the master the decision was made against', async () => {
    const { trace, outcome, status } = await run({ recorded: 'r-2' });
    expect(outcome).toEqual({ result: { done: false, master: 'r-2' } });
    expect(trace.filter(isMutation)).toEqual(['label r-0: -', 'label r-3: -']);
    expect(status.master).toBe('r-2');
  });

  it.each(['restarted', 'unreachable'] as const)(
    'a target %s before REPLICAOF is not promoted and the record goes back',
    async (target) => {
      const { trace, outcome, status } = await run({ target });
      expect(outcome).toEqual({ error: expect.any(TemporaryError) });
      expect((outcome as { error: TemporaryError }).error.reason).toBe('TargetChanged');
      expect(trace.filter(isMutation)).toEqual([
        'label r-0: -',
        'label r-3: -',
        'status write: master=r-1 failover',
        'status write: master=r-0 failover',
      ]);
      expect(status).toMatchObject({ master: 'r-0', failover: { count: 1, last: { to: 'r-0' } } });
    },
  );
});

const scenarios: [string, Scenario][] = [
  ['a promotion', {}],
  ['a refused unlabel', { unlabelFails: true }],
  ['a target that restarted', { target: 'restarted' }],
  ['a target that does not answer', { target: 'unreachable' }],
  ['a record another run changed first', { recorded: 'r-2' }],
];

describe.each(scenarios)('failOver in %s, the lease lost part way', (_name, scenario) => {
  /** The run with the lease held: where each check and each call to the outside falls. */
  const baseline = async () => (await run(scenario)).trace;

  it('stops at whichever check fails: nothing changes after it', async () => {
    const full = await baseline();
    const checks = full.filter(isCheck).length;
    for (let n = 1; n <= checks; n++) {
      const { trace, outcome } = await run(scenario, { atCheck: n });
      const failed = trace.indexOf('check: lock lost');
      expect(failed, `check ${n}`).toBeGreaterThanOrEqual(0);
      // It failed at exactly the n-th check, after doing what the full run does up to there.
      expect(trace.slice(0, failed), `check ${n}`).toEqual(full.slice(0, failed));
      expect(trace.slice(0, failed).filter(isCheck), `check ${n}`).toHaveLength(n - 1);
      expect(mutationsAfter(trace, failed), `check ${n}`).toEqual([]);
      // Once r-1 is the labelled master the failover has happened: a replica left unrepointed is
      // reconcile's to do. Before that, the run ends on the lost lock.
      if (trace.slice(0, failed).includes('label r-1: master'))
        expect(outcome, `check ${n}`).toEqual({ result: { done: true, at: '2026-11-23T10:00:00.000Z' } });
      else expect(outcome, `check ${n}`).toEqual({ error: expect.any(LockLostError) });
    }
  });

  it('a run stalled past its lease during any call changes nothing after it', async () => {
    const full = await baseline();
    const steps = full.filter((e) => !isCheck(e)).length;
    for (let k = 1; k <= steps; k++) {
      const { trace } = await run(scenario, { atStep: k });
      const stalled = nthStep(trace, k);
      expect(trace.slice(0, stalled + 1), `step ${k}`).toEqual(full.slice(0, stalled + 1));
      expect(mutationsAfter(trace, stalled), `lease lost during step ${k}: ${trace[stalled]}`).toEqual([]);
    }
  });
});
