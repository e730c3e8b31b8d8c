import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { OwnershipConflict } from '../../shared/kube/ownership.ts';
import type { Auth } from '../../shared/rediscluster/auth.ts';
import { fakeClusterStore } from '../../shared/rediscluster/fixture.ts';
import type { Role } from '../../shared/rediscluster/names.ts';
import type { Refusal } from '../../shared/rediscluster/owned.ts';
import type { Instance } from '../../shared/rediscluster/probe.ts';
import { done, type Outcome, retryAfter, toOutcome } from '../../shared/runtime/handler.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { ReconcilePorts } from './ports.ts';
import { runReconcile } from './run.ts';

type Status = NonNullable<RedisCluster['status']>;

const ip = (ordinal: number) => `10.0.0.${ordinal + 10}`;
const master = (
  ordinal: number,
  offset: number,
  o: { label?: Role; keys?: number; replid?: string; replid2?: string } = {},
): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: true,
  terminating: false,
  keys: o.keys ?? 1,
  ...(o.label ? { labelledRole: o.label } : {}),
  replication: {
    role: 'master',
    offset,
    replid: o.replid ?? 'a',
    ...(o.replid2 ? { replid2: o.replid2 } : {}),
    replicas: [],
  },
});
const replica = (
  ordinal: number,
  offset: number,
  of: number,
  o: { label?: Role; linkUp?: boolean; replid?: string } = {},
): Instance => ({
  pod: `r-${ordinal}`,
  ordinal,
  ip: ip(ordinal),
  podReady: true,
  terminating: false,
  keys: 1,
  ...(o.label ? { labelledRole: o.label } : {}),
  replication: {
    role: 'replica',
    offset,
    masterHost: ip(of),
    masterPort: 6379,
    linkUp: o.linkUp ?? true,
    syncInProgress: false,
    replid: o.replid ?? 'a',
    replid2: '',
    linkDownSeconds: o.linkUp === false ? 3 : 0,
  },
});
/** Master r-0, replicas following it, every label in place: nothing to do. */
const serving = () => [
  master(0, 100, { label: 'master' }),
  replica(1, 100, 0, { label: 'replica' }),
  replica(2, 100, 0, { label: 'replica' }),
];

const t0 = Date.parse('2026-11-23T10:00:00Z');

/** The cluster as the API server holds it; each status written is noted in `effects`. */
const apiServer = (
  effects: string[],
  status: Status,
  o: { meta?: Partial<RedisCluster['metadata']>; spec?: Partial<RedisCluster['spec']> } = {},
) =>
  fakeClusterStore(status, {
    ...o,
    onWrite: (next) => effects.push(`status master=${next.master ?? '-'} phase=${next.phase ?? '-'}`),
  });

type WorldOptions = {
  /** What finalize says: the finalizer is gone. */
  finalized?: boolean;
  auth?: Auth;
  authError?: Error;
  /** What applyOwned refuses with, instead of applying. */
  refusal?: Refusal;
  /** The StatefulSet's replicas before this run. */
  stsReplicas?: number;
  updateRevision?: string;
  /** Pod → controller-revision-hash; the update revision when absent. */
  revisions?: Record<string, string>;
  /** Labelled pods that are not the StatefulSet's. */
  foreign?: V1Pod[];
  rotation?: { password: string; waiting?: string };
  /** Pods whose topology command fails. */
  failing?: string[];
  /** Pods whose CONFIG GET of the quorum fails in a probe. */
  unreadQuorum?: string[];
  /** Pods whose server does not answer a probe. */
  silent?: string[];
  bootstrap?: Outcome;
};

const podOf = (i: Instance, revision: string, stsUid = 'sts-uid'): V1Pod => ({
  metadata: {
    name: i.pod,
    uid: `uid-${i.pod}`,
    labels: { 'controller-revision-hash': revision },
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'r', uid: stsUid, controller: true },
    ],
  },
  status: {
    phase: 'Running',
    ...(i.ip ? { podIP: i.ip } : {}),
    conditions: [{ type: 'Ready', status: i.podReady ? 'True' : 'False' }],
  },
});

/**
 * Reconcile's outside world in memory: the servers as instances a probe reads, commands that
 * change their roles (REPLICAOF), labels on their pods, and a log of every act in order.
 */
const world = (servers: Instance[], o: WorldOptions = {}) => {
  const effects: string[] = [];
  // Every server reports its quorum: by default redis.conf's start-up one.
  const state = new Map(
    servers.map((s) => [s.pod, { quorum: { toWrite: 1, maxLag: 10 }, ...structuredClone(s) }]),
  );
  const at = (host: string) => [...state.values()].find((s) => s.ip === host);
  const revision = o.updateRevision ?? 'rev1';
  const calls = {
    readAuth: 0,
    probes: [] as {
      pods: string[];
      passwords: readonly string[];
      inspectAuth?: boolean;
      inspectQuorum?: boolean;
    }[],
    applyOwned: [] as Parameters<ReconcilePorts['applyOwned']>[0][],
    rollPassword: [] as Parameters<ReconcilePorts['rollPassword']>[0][],
    passwords: [] as string[],
    switchover: [] as Parameters<ReconcilePorts['switchover']>[0][],
    advanceBootstrap: [] as Parameters<ReconcilePorts['advanceBootstrap']>[0][],
  };
  const ports: ReconcilePorts = {
    finalize: async () => {
      effects.push('finalize');
      return o.finalized ?? true;
    },
    addFinalizer: async () => void effects.push('addFinalizer'),
    readAuth: async () => {
      calls.readAuth++;
      if (o.authError) throw o.authError;
      return o.auth ?? { desired: 'pw', applied: 'pw' };
    },
    listLabelledPods: async () => [
      ...[...state.values()].map((i) => podOf(i, o.revisions?.[i.pod] ?? revision)),
      ...(o.foreign ?? []),
    ],
    applyOwned: async (x) => {
      calls.applyOwned.push(x);
      if (o.refusal) return o.refusal;
      const now = o.stsReplicas ?? 3;
      let replicas = x.stsReplicas(now);
      if (replicas < now && x.beforeScaleDown && !(await x.beforeScaleDown('sts-uid', replicas)))
        replicas = now;
      effects.push(`apply sts replicas=${replicas}`);
      return {
        sts: {
          metadata: { name: 'r', uid: 'sts-uid', generation: 1 },
          spec: { replicas, serviceName: 'r-headless', selector: {}, template: {} },
          status: { replicas, updateRevision: revision, observedGeneration: 1 },
        },
      };
    },
    probeInstances: async (_cluster, pods, passwords, p) => {
      calls.probes.push({
        pods: pods.map((x) => x.metadata?.name ?? ''),
        passwords,
        ...(p?.inspectAuth === undefined ? {} : { inspectAuth: p.inspectAuth }),
        ...(p?.inspectQuorum === undefined ? {} : { inspectQuorum: p.inspectQuorum }),
      });
      return pods.flatMap((x) => {
        const s = state.get(x.metadata?.name ?? '');
        if (!s) return [];
        const { quorum, replication, keys, ...rest } = structuredClone(s);
        if (o.silent?.includes(s.pod)) return [{ ...rest, error: 'timeout' } as Instance];
        return [{ ...rest, replication, keys, ...(o.unreadQuorum?.includes(s.pod) ? {} : { quorum }) }];
      });
    },
    rollPassword: async (x) => {
      calls.rollPassword.push(x);
      return o.rotation ?? { password: x.auth.applied };
    },
    command: async (host, password, args) => {
      const s = at(host);
      effects.push(`${s?.pod}: ${args.join(' ')}`);
      calls.passwords.push(password);
      if (!s || o.failing?.includes(s.pod)) throw new Error('connection reset');
      const r = s.replication;
      if (args[0] === 'CONFIG' && s.quorum) {
        if (args[2] === 'min-replicas-to-write') s.quorum.toWrite = Number(args[3]);
        else s.quorum.maxLag = Number(args[3]);
        return 'OK';
      }
      if (args[1] === 'NO') {
        s.replication = { role: 'master', offset: r?.offset ?? 0, replid: `${s.pod}-new`, replicas: [] };
        return 'OK';
      }
      const m = at(args[1] ?? '')?.replication;
      s.replication = {
        role: 'replica',
        offset: m?.offset ?? 0,
        masterHost: args[1] ?? '',
        masterPort: Number(args[2]),
        linkUp: true,
        syncInProgress: false,
        replid: m?.replid ?? '',
        replid2: '',
        linkDownSeconds: 0,
      };
      return 'OK';
    },
    labelPod: async (_namespace, pod, role) => {
      effects.push(`label ${pod} ${role}`);
      const s = state.get(pod);
      if (s && role) s.labelledRole = role;
      else if (s) delete s.labelledRole;
    },
    recordEvent: async (e) => void effects.push(`event ${e.type} ${e.reason}: ${e.note}`),
    switchover: async (x) => {
      calls.switchover.push(x);
      effects.push(`switchover ${x.from.pod} → ${x.to.pod}`);
    },
    deletePod: async (namespace, pod, uid) => void effects.push(`delete ${namespace}/${pod} uid=${uid}`),
    advanceBootstrap: async (x) => {
      calls.advanceBootstrap.push(x);
      return o.bootstrap ?? retryAfter(2000, 'Bootstrapping');
    },
  };
  return { ports, calls, effects, state };
};

const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silent,
};

/** A reconcile run on the cluster as stored now; fence() notes itself among the effects. */
const run = (api: ReturnType<typeof apiServer>, w: ReturnType<typeof world>, log = silent) =>
  runReconcile(
    api.load(),
    { clock: () => new Date(t0), fence: () => void w.effects.push('fence'), log },
    w.ports,
  );

/** The effects without the fence calls. */
const acts = (w: ReturnType<typeof world>) => w.effects.filter((e) => e !== 'fence');
const condition = (s: Status, type: string) => s.conditions?.find((c) => c.type === type);

describe('runReconcile', () => {
  it('deleting: marks the cluster Deleting once and waits for finalize, touching nothing else', async () => {
    const opts: WorldOptions = { finalized: false };
    const w = world(serving(), opts);
    const { effects } = w;
    const api = apiServer(
      effects,
      { master: 'r-0', phase: 'Ready' },
      { meta: { deletionTimestamp: '2026-11-23T09:00:00Z' } },
    );
    expect(await run(api, w)).toEqual(retryAfter(1000, 'WaitingForPods'));
    expect(effects).toEqual(['status master=r-0 phase=Deleting', 'finalize']);
    opts.finalized = true;
    expect(await run(api, w)).toEqual(done);
    expect(effects).toEqual(['status master=r-0 phase=Deleting', 'finalize', 'finalize']);
    expect(w.calls.readAuth).toBe(0);
    expect(w.calls.probes).toHaveLength(0);
  });

  it('adds the finalizer first and does nothing else in that run', async () => {
    const w = world(serving());
    const api = apiServer(w.effects, { master: 'r-0' }, { meta: { finalizers: ['other.io/keep'] } });
    expect(await run(api, w)).toEqual(done);
    expect(w.effects).toEqual(['addFinalizer']);
    expect(w.calls.readAuth).toBe(0);
    expect(w.calls.applyOwned).toHaveLength(0);
  });

  // r-2 (fresh, unlabelled) would be made to follow r-0 and labelled, had the run gone on.
  const needsWork = () => [
    master(0, 100, { label: 'master' }),
    replica(1, 100, 0, { label: 'replica' }),
    master(2, 0, { keys: 0, replid: 'fresh' }),
  ];
  it.each([
    [
      'a spec that admission refuses',
      {},
      { podTemplate: { labels: { 'tideway.dev/role': 'master' } } },
      'InvalidSpec',
      /^podTemplate\.labels must not set tideway\.dev\/\*/,
    ],
    [
      'a password Secret that is not its own',
      { authError: new OwnershipConflict('Secret r-auth already exists and is not managed by this cluster') },
      {},
      'OwnershipConflict',
      /^Secret r-auth already exists/,
    ],
    [
      'an owned object that is not its own',
      {
        refusal: {
          reason: 'OwnershipConflict',
          message: 'StatefulSet r already exists and is not managed by this cluster',
        },
      },
      {},
      'OwnershipConflict',
      /^StatefulSet r already exists/,
    ],
  ] as const)(
    'refuses %s: a Reconciled=False condition, nothing probed, commanded or labelled',
    async (_, o, spec, reason, message) => {
      const w = world(needsWork(), o);
      const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' }, { spec });
      expect(await run(api, w)).toEqual(done);
      expect(acts(w)).toEqual(['status master=r-0 phase=Ready']);
      expect(w.calls.probes).toHaveLength(0);
      const c = condition(api.stored.status, 'Reconciled');
      expect(c).toMatchObject({ status: 'False', reason, observedGeneration: 2 });
      expect(c?.message).toMatch(message);
      expect(api.stored.status.master).toBe('r-0');
      expect(w.calls.readAuth).toBe(reason === 'InvalidSpec' ? 0 : 1);
    },
  );

  it('chooses the first master, records it, then makes the others follow with the rotated password, then labels', async () => {
    // An old volume on r-1: the instance with the data becomes master, not the lowest ordinal.
    const w = world(
      [
        master(0, 0, { keys: 0, replid: 'f0' }),
        master(1, 500, { keys: 5, replid: 'old' }),
        master(2, 0, { keys: 0, replid: 'f2' }),
      ],
      { rotation: { password: 'new' } },
    );
    const api = apiServer(w.effects, {});
    expect(await run(api, w)).toEqual(retryAfter(1000, 'Converging'));
    expect(w.effects).toEqual([
      'apply sts replicas=3',
      'fence',
      'status master=r-1 phase=-',
      'fence',
      'r-0: REPLICAOF 10.0.0.11 6379',
      'fence',
      'r-2: REPLICAOF 10.0.0.11 6379',
      'fence',
      'label r-0 replica',
      'fence',
      'label r-1 master',
      'fence',
      'label r-2 replica',
      'fence',
      'status master=r-1 phase=Ready',
    ]);
    expect(w.calls.passwords).toEqual(['new', 'new']);
    // Probed with the auth inspection for the rotation, then again (roles changed) without it.
    expect(w.calls.probes).toEqual([
      { pods: ['r-0', 'r-1', 'r-2'], passwords: ['pw'], inspectAuth: true, inspectQuorum: true },
      { pods: ['r-0', 'r-1', 'r-2'], passwords: ['pw'] },
    ]);
    expect(w.calls.rollPassword[0]?.instances.map((i) => i.pod)).toEqual(['r-0', 'r-1', 'r-2']);
    const s = api.stored.status;
    expect(s).toMatchObject({
      master: 'r-1',
      phase: 'Ready',
      observedGeneration: 2,
      replication: { id: 'old', offset: 500 },
    });
    expect(condition(s, 'Reconciled')).toMatchObject({ status: 'True', reason: 'Applied' });

    // Level-triggered: the next run finds nothing to do.
    w.effects.length = 0;
    expect(await run(api, w)).toEqual(done);
    expect(acts(w)).toEqual(['apply sts replicas=3']);
  });

  it('adopts a switchover the servers made without its record: record, repoint, labels, a Warning event', async () => {
    const w = world([
      replica(0, 100, 2, { label: 'master', replid: 'b' }),
      replica(1, 90, 0, { label: 'replica', replid: 'a' }),
      master(2, 100, { label: 'replica', replid: 'b', replid2: 'a' }),
    ]);
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' });
    expect(await run(api, w)).toEqual(retryAfter(1000, 'Converging'));
    expect(acts(w)).toEqual([
      'apply sts replicas=3',
      'status master=r-2 phase=Ready',
      'r-1: REPLICAOF 10.0.0.12 6379',
      'label r-0 replica',
      'label r-2 master',
      'event Warning Adopted: master r-0 → r-2: adopted the running master',
      'status master=r-2 phase=Ready',
    ]);
    expect(api.stored.status.replication).toEqual({ id: 'b', offset: 100, previous: ['a'] });
  });

  it('never writes status.master over one recorded meanwhile (compare-and-set), nor acts on the stale record', async () => {
    const changed = {
      afterMs: 200,
      kind: 'retry',
      reason: 'MasterChanged: status.master changed meanwhile; looking again',
    };
    // A first master to record, but another run recorded one since this run read the cluster.
    const fresh = [master(0, 0, { keys: 0 }), master(1, 0, { keys: 0 }), master(2, 0, { keys: 0 })];
    const w = world(fresh);
    const api = apiServer(w.effects, {});
    const loaded = api.load();
    api.stored.status = { master: 'r-2' };
    const first = runReconcile(loaded, { clock: () => new Date(t0), fence: () => {}, log: silent }, w.ports);
    expect(toOutcome({ error: await first.catch((e: unknown) => e) })).toEqual(changed);
    expect(acts(w)).toEqual(['apply sts replicas=3']);
    expect(api.stored.status).toEqual({ master: 'r-2' });

    // Nothing to change, but a switchover moved the record on while this run looked.
    const w2 = world(serving());
    const api2 = apiServer(w2.effects, { master: 'r-0' });
    const loaded2 = api2.load();
    api2.stored.status = { master: 'r-1' };
    const second = runReconcile(
      loaded2,
      { clock: () => new Date(t0), fence: () => void w2.effects.push('fence'), log: silent },
      w2.ports,
    );
    expect(toOutcome({ error: await second.catch((e: unknown) => e) })).toEqual(changed);
    expect(w2.effects).toEqual(['apply sts replicas=3']);
    expect(api2.stored.status).toEqual({ master: 'r-1' });
  });

  it('never promotes on its own when the recorded master has no pod: blocked, record and labels kept (issue 11)', async () => {
    // r-0's pod is gone; r-2 has the most data and would be the obvious (wrong) pick.
    const w = world(
      [
        replica(1, 90, 0, { label: 'replica', linkUp: false }),
        replica(2, 100, 0, { label: 'replica', linkUp: false }),
      ],
      { stsReplicas: 3 },
    );
    const since = new Date(t0 - 2000).toISOString();
    const api = apiServer(w.effects, {
      master: 'r-0',
      phase: 'Ready',
      failover: { masterUnreachableSince: since },
    });
    expect(await run(api, w)).toEqual(retryAfter(2000, 'TopologyBlocked'));
    expect(acts(w)).toEqual(['apply sts replicas=3', 'status master=r-0 phase=Degraded']);
    const s = api.stored.status;
    expect(condition(s, 'Reconciled')).toMatchObject({
      status: 'True',
      reason: 'TopologyBlocked',
      message: 'master r-0 does not answer',
    });
    expect(condition(s, 'Ready')).toMatchObject({ status: 'False', reason: 'MasterNotReady' });
    // While the master is lost, the StatefulSet keeps its size (no scale-down removes a candidate).
    expect(w.calls.applyOwned[0]?.stsReplicas(5)).toBe(5);
  });

  it('keeps the StatefulSet’s size while the master’s pod is not Ready, before health records the outage', async () => {
    // Scaling 3 → 2 as r-0, the master, stops: r-2 may be the replica to promote.
    const stopped = { ...master(0, 100, { label: 'master' }), podReady: false };
    const w = world([
      stopped,
      replica(1, 90, 0, { label: 'replica' }),
      replica(2, 100, 0, { label: 'replica' }),
    ]);
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 2 } });
    await run(api, w);
    expect(w.calls.applyOwned[0]?.stsReplicas(3)).toBe(3);
    // With the master's pod Ready, the scale-down goes ahead.
    const ready = world([master(0, 100, { label: 'master' }), replica(1, 90, 0, { label: 'replica' })]);
    await run(apiServer(ready.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 2 } }), ready);
    expect(ready.calls.applyOwned[0]?.stsReplicas(3)).toBe(2);
  });

  /** Servers as probed with their write quorum. */
  const withQuorum = (servers: Instance[], toWrite: number, maxLag = 10) =>
    servers.map((i) => ({ ...i, quorum: { toWrite, maxLag } }));

  it('scaling down to one instance: the master takes min-replicas-to-write 0 before the StatefulSet shrinks', async () => {
    const w = world(withQuorum(serving(), 1));
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 1 } });
    await run(api, w);
    // Before the apply: the replicas' connections close once it is applied.
    expect(acts(w).slice(0, 2)).toEqual(['r-0: CONFIG SET min-replicas-to-write 0', 'apply sts replicas=1']);
    expect(w.calls.probes[0]).toEqual({ pods: ['r-0'], passwords: ['pw'], inspectQuorum: true });
    expect(w.state.get('r-0')?.quorum).toEqual({ toWrite: 0, maxLag: 10 });
    // No scale-down while the master's pod is not Ready, and so nothing before the apply.
    const lost = world(withQuorum([{ ...master(0, 100, { label: 'master' }), podReady: false }], 1));
    await run(apiServer(lost.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 1 } }), lost);
    expect(acts(lost)[0]).toBe('apply sts replicas=3');
  });

  /** r-0 restarted: fenced (a replica of nothing), with the start-up quorum of redis.conf. */
  const fencedMaster = (): Instance => {
    const r = replica(0, 100, 0).replication as Extract<Instance['replication'], { role: 'replica' }>;
    return {
      ...replica(0, 100, 0),
      replication: {
        ...r,
        masterHost: '127.0.0.1',
        masterPort: 1,
        linkUp: false,
        linkDownSeconds: Number.POSITIVE_INFINITY,
      },
      quorum: { toWrite: 1, maxLag: 10 },
    };
  };
  const single = { master: 'r-0', phase: 'Ready' as const, replication: { id: 'a', offset: 100 } };

  it('lowers a restarted single instance’s quorum before reinstating it, and sends nothing more when that fails', async () => {
    const w = world([fencedMaster()], { stsReplicas: 1 });
    await run(apiServer(w.effects, single, { spec: { replicas: 1 } }), w);
    expect(acts(w).filter((e) => e.startsWith('r-0:'))).toEqual([
      'r-0: CONFIG SET min-replicas-to-write 0',
      'r-0: REPLICAOF NO ONE',
    ]);

    const broken = world([fencedMaster()], { stsReplicas: 1, failing: ['r-0'] });
    await run(apiServer(broken.effects, single, { spec: { replicas: 1 } }), broken);
    expect(acts(broken).filter((e) => e.startsWith('r-0:'))).toEqual([
      'r-0: CONFIG SET min-replicas-to-write 0',
    ]);
  });

  it('gives no role to a server whose quorum could not be read, and says why it is not done', async () => {
    const w = world([fencedMaster()], { stsReplicas: 1, unreadQuorum: ['r-0'] });
    const api = apiServer(w.effects, single, { spec: { replicas: 1 } });
    expect(await run(api, w)).toEqual(retryAfter(1000, 'Converging'));
    expect(acts(w).filter((e) => e.startsWith('r-0:'))).toEqual([]);
    expect(acts(w)).not.toContain('label r-0 master');
    expect(condition(api.stored.status, 'Reconciled')).toMatchObject({
      reason: 'WriteQuorum',
      message: 'the write quorum of r-0 could not be read',
    });
  });

  it('lowers the quorum only with the StatefulSet: a master above the new size hands over first, keeping it', async () => {
    // 3 → 1 with the master at r-2: the StatefulSet stays at 3 until the switchover.
    const servers = withQuorum(
      [
        replica(0, 100, 2, { label: 'replica' }),
        replica(1, 100, 2, { label: 'replica' }),
        master(2, 100, { label: 'master' }),
      ],
      1,
    );
    const w = world(servers);
    await run(apiServer(w.effects, { master: 'r-2', phase: 'Ready' }, { spec: { replicas: 1 } }), w);
    expect(acts(w).filter((e) => e.includes('CONFIG'))).toEqual([]);
    expect(acts(w)).toContain('switchover r-2 → r-0');
  });

  it('keeps the StatefulSet’s size when the master could not take the lower quorum', async () => {
    const w = world(withQuorum(serving(), 1), { failing: ['r-0'] });
    await run(apiServer(w.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 1 } }), w);
    expect(acts(w).slice(0, 2)).toEqual(['r-0: CONFIG SET min-replicas-to-write 0', 'apply sts replicas=3']);
    // Nor when its quorum could not be read.
    const u = world(withQuorum(serving(), 1), { unreadQuorum: ['r-0'] });
    await run(apiServer(u.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 1 } }), u);
    expect(acts(u)[0]).toBe('apply sts replicas=3');
    // Nor when it does not answer at all.
    const q = world(withQuorum(serving(), 1), { silent: ['r-0'] });
    await run(apiServer(q.effects, { master: 'r-0', phase: 'Ready' }, { spec: { replicas: 1 } }), q);
    expect(acts(q)[0]).toBe('apply sts replicas=3');
  });

  it('labels no instance whose topology command failed', async () => {
    const warns: unknown[] = [];
    const w = world(needsWork(), { failing: ['r-2'] });
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' });
    expect(await run(api, w, { ...silent, warn: (msg, f) => void warns.push({ msg, ...f }) })).toEqual(
      retryAfter(1000, 'Converging'),
    );
    expect(acts(w)).toEqual([
      'apply sts replicas=3',
      'r-2: REPLICAOF 10.0.0.10 6379',
      'label r-2 null',
      'status master=r-0 phase=Degraded',
    ]);
    expect(warns).toMatchObject([{ msg: 'topology command failed', pod: 'r-2', command: 'REPLICAOF' }]);
  });

  // From 4 to 2 with the master at r-3: it hands over to the most advanced replica below 2 (r-1),
  // not to r-2, which has more but goes next.
  const scaleDown = () => [
    replica(0, 90, 3, { label: 'replica' }),
    replica(1, 95, 3, { label: 'replica' }),
    replica(2, 100, 3, { label: 'replica' }),
    master(3, 100, { label: 'master' }),
  ];
  it('scales down by a switchover away from a master beyond the new size, once in sync', async () => {
    const w = world(scaleDown(), { stsReplicas: 4 });
    const api = apiServer(w.effects, { master: 'r-3', phase: 'Ready' }, { spec: { replicas: 2 } });
    const loaded = api.load();
    const outcome = await runReconcile(
      loaded,
      { clock: () => new Date(t0), fence: () => {}, log: silent },
      w.ports,
    );
    expect(outcome).toEqual(retryAfter(200, 'Switchover'));
    expect(acts(w)).toEqual([
      'apply sts replicas=4',
      // Not Ready while the master is above the new size (it was, before: a lie for kubectl wait).
      'status master=r-3 phase=Degraded',
      'switchover r-3 → r-1',
    ]);
    expect(w.calls.switchover[0]).toMatchObject({ cluster: loaded, password: 'pw' });
    expect(condition(api.stored.status, 'Reconciled')).toMatchObject({
      reason: 'ScalingDown',
      message: 'scaling down to 2: r-3 hands the master role over first',
    });
  });

  it('waits with the scale-down while any instance is out of sync', async () => {
    const servers = scaleDown();
    const r0 = servers[0]?.replication;
    if (r0?.role === 'replica') r0.syncInProgress = true; // not the target, but the cluster is not in sync
    const w = world(servers, { stsReplicas: 4 });
    const api = apiServer(w.effects, { master: 'r-3', phase: 'Ready' }, { spec: { replicas: 2 } });
    expect(await run(api, w)).toEqual(retryAfter(2000, 'ScalingDown'));
    expect(w.calls.switchover).toHaveLength(0);
    expect(condition(api.stored.status, 'Reconciled')?.message).toBe(
      'scaling down to 2: r-3 hands the master role over first, once a replica is in sync',
    );
  });

  it('takes no disruptive step while a restore runs', async () => {
    const restoring = {
      type: 'Restoring',
      status: 'True' as const,
      reason: 'Loading',
      message: 'loading backup b1',
      lastTransitionTime: new Date(t0 - 60_000).toISOString(),
    };
    const w = world(scaleDown(), { stsReplicas: 4 });
    const api = apiServer(
      w.effects,
      { master: 'r-3', phase: 'Ready', conditions: [restoring] },
      { spec: { replicas: 2 } },
    );
    expect(await run(api, w)).toEqual(retryAfter(2000, 'Restoring'));
    expect(acts(w)).toEqual(['apply sts replicas=4', 'status master=r-3 phase=Degraded']);
    expect(condition(api.stored.status, 'Reconciled')).toMatchObject({
      reason: 'Restoring',
      message: 'a restore runs: loading backup b1',
    });
  });

  const upgrading: WorldOptions = { updateRevision: 'rev2', revisions: { 'r-0': 'rev1', 'r-1': 'rev1' } };
  it('rolls an update one pod at a time: that very outdated replica (uid), then an Event', async () => {
    const w = world(serving(), upgrading);
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' });
    expect(await run(api, w)).toEqual(retryAfter(1000, 'RollingUpdate'));
    expect(w.effects).toEqual([
      'apply sts replicas=3',
      'fence',
      'status master=r-0 phase=Ready',
      'fence',
      'delete ns/r-1 uid=uid-r-1',
      'event Normal RollingUpdate: restarting replica r-1 (1/3 updated)',
    ]);
  });

  it('created from a backup: its bootstrap first, with a status write that keeps the compare-and-set', async () => {
    const w = world(serving(), { ...upgrading, bootstrap: retryAfter(10_000, 'BackupNotReady') });
    const api = apiServer(
      w.effects,
      { master: 'r-0', phase: 'Creating' },
      { spec: { bootstrap: { fromBackup: { name: 'b1' } } } },
    );
    expect(await run(api, w)).toEqual(retryAfter(10_000, 'BackupNotReady'));
    expect(acts(w)).toEqual(['apply sts replicas=3', 'status master=r-0 phase=Creating']);
    const b = w.calls.advanceBootstrap[0];
    expect(b?.masterServes).toBe(true);
    api.stored.status = { ...api.stored.status, master: 'r-1' };
    await expect(b?.writeStatus((s) => ({ ...s, bootstrap: { reason: 'Restoring' } }))).rejects.toMatchObject(
      {
        reason: 'MasterChanged',
      },
    );
    expect(api.stored.status.bootstrap).toBeUndefined();
  });

  it('names pods that carry its labels but are not its StatefulSet’s, and keeps them out of the probe', async () => {
    const old = podOf(master(3, 0), 'rev1', 'old-sts-uid'); // a pod of an earlier StatefulSet r
    const w = world(serving(), { foreign: [old] });
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' });
    expect(await run(api, w)).toEqual(retryAfter(30_000, 'ForeignPods'));
    // Its configuration is still kept for it (applyOwned's pods), but it is not probed.
    expect(w.calls.applyOwned[0]?.pods.map((p) => p.metadata?.name)).toEqual(['r-0', 'r-1', 'r-2', 'r-3']);
    expect(w.calls.probes.map((p) => p.pods)).toEqual([['r-0', 'r-1', 'r-2']]);
    expect(condition(api.stored.status, 'Reconciled')).toMatchObject({
      status: 'False',
      reason: 'ForeignPods',
    });
    expect(condition(api.stored.status, 'Reconciled')?.message).toMatch(
      /^pods r-3 carry this cluster's labels/,
    );
  });

  it('says so and looks again while a password rotation waits', async () => {
    const waiting = 'the password changes once every instance answers; waiting for r-2';
    const w = world(serving(), {
      auth: { desired: 'new', applied: 'pw' },
      rotation: { password: 'pw', waiting },
    });
    const api = apiServer(w.effects, { master: 'r-0', phase: 'Ready' });
    expect(await run(api, w)).toEqual(retryAfter(2000, 'RotatingPassword'));
    expect(w.calls.probes[0]?.passwords).toEqual(['pw', 'new']);
    expect(condition(api.stored.status, 'Reconciled')).toMatchObject({
      status: 'True',
      reason: 'RotatingPassword',
      message: waiting,
    });
  });
});
