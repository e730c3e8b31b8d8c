import type { CloudEvent } from 'cloudevents';
import { EventType } from '../../shared/events/types.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { handler } from './index.ts';

// An in-memory stand-in for the CustomObjectsApi calls functions/schedule makes, for unit tests of
// whole handler runs: objects keyed by plural and name, resourceVersions, delete preconditions
// (uid and resourceVersion, as the API server checks them), status compare-and-set, and hooks to
// change the world between two calls. Unit tests only: the e2e tests run the real API server.

type Obj = {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    deletionTimestamp?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};
type Call = {
  plural: string;
  name?: string;
  labelSelector?: string;
  body?: Obj & { preconditions?: Record<string, string> };
};
type Hook = (a: Call) => Promise<void> | void;

const httpError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });

/** JSON merge patch (RFC 7386): null removes, objects merge, anything else replaces. */
const mergePatch = (target: Record<string, unknown>, patch: Record<string, unknown>) => {
  const plain = (v: unknown): v is Record<string, unknown> =>
    !!v && typeof v === 'object' && !Array.isArray(v);
  for (const [k, v] of Object.entries(patch)) {
    const t = target[k];
    if (v === null) delete target[k];
    else if (plain(v) && plain(t)) mergePatch(t, v);
    else target[k] = structuredClone(v);
  }
};

export const fakeKube = () => {
  const objects = new Map<string, Obj>();
  const calls: string[] = [];
  const hooks: { get?: Hook; create?: Hook; delete?: Hook } = {};
  let rv = 1;
  const key = (plural: string, name: string) => `${plural}/${name}`;
  const bump = (o: Obj) => {
    o.metadata.resourceVersion = String(rv++);
  };
  const api = {
    getNamespacedCustomObject: async (a: Call) => {
      await hooks.get?.(a);
      const o = objects.get(key(a.plural, a.name ?? ''));
      if (!o) throw httpError(404);
      return structuredClone(o);
    },
    listNamespacedCustomObject: async (a: Call) => {
      const [label, value] = String(a.labelSelector).split('=');
      return {
        items: [...objects.entries()]
          .filter(([k, o]) => k.startsWith(`${a.plural}/`) && o.metadata.labels?.[label ?? ''] === value)
          .map(([, o]) => structuredClone(o)),
      };
    },
    createNamespacedCustomObject: async (a: Call) => {
      calls.push(`create ${a.plural}/${a.body?.metadata.name}`);
      await hooks.create?.(a);
      const k = key(a.plural, a.body?.metadata.name ?? '');
      if (objects.has(k)) throw httpError(409);
      const o = structuredClone(a.body) as Obj;
      o.metadata.uid = `uid-${o.metadata.name}`;
      o.metadata.creationTimestamp = new Date().toISOString();
      bump(o);
      objects.set(k, o);
      return structuredClone(o);
    },
    deleteNamespacedCustomObject: async (a: Call) => {
      await hooks.delete?.(a);
      const o = objects.get(key(a.plural, a.name ?? ''));
      if (!o) throw httpError(404);
      const p = a.body?.preconditions ?? {};
      if (
        (p.uid && p.uid !== o.metadata.uid) ||
        (p.resourceVersion && p.resourceVersion !== o.metadata.resourceVersion)
      )
        throw httpError(409);
      calls.push(`delete ${a.plural}/${a.name} (${String(o.status?.phase ?? 'no phase')})`);
      // A Backup's finalizer keeps it until its stored object is gone.
      o.metadata.deletionTimestamp = new Date().toISOString();
      bump(o);
      return {};
    },
    /** A merge patch (the only kind the schedule sends), with the resourceVersion as precondition. */
    patchNamespacedCustomObject: async (a: Call) => {
      const o = objects.get(key(a.plural, a.name ?? ''));
      if (!o) throw httpError(404);
      const rv = a.body?.metadata.resourceVersion;
      if (rv && rv !== o.metadata.resourceVersion) throw httpError(409);
      calls.push(`patch ${a.plural}/${a.name}`);
      const { resourceVersion: _rv, ...metadata } = a.body?.metadata ?? { name: '' };
      mergePatch(o.metadata, metadata as Record<string, unknown>);
      bump(o);
      return structuredClone(o);
    },
    replaceNamespacedCustomObjectStatus: async (a: Call) => {
      const o = objects.get(key(a.plural, a.name ?? ''));
      if (!o) throw httpError(404);
      if (o.metadata.resourceVersion !== a.body?.metadata.resourceVersion) throw httpError(409);
      o.status = structuredClone(a.body?.status);
      bump(o);
      return structuredClone(o);
    },
    createNamespacedEvent: async () => ({}),
  };
  const ctx = {
    kube: { makeApiClient: () => api },
    function: 'schedule',
    attempt: 1,
    maxAttempts: 100,
    clock: () => new Date(),
    fence: () => undefined,
    lockToken: () => 1,
    log: { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} },
    signal: new AbortController().signal,
    env: {},
  } as unknown as HandlerContext;
  return {
    ctx,
    calls,
    hooks,
    put: (plural: string, o: Obj) => {
      bump(o);
      objects.set(key(plural, o.metadata.name), o);
    },
    get: (plural: string, name: string) => objects.get(key(plural, name)),
    /** Change an object as another writer would (a new resourceVersion). */
    update: (plural: string, name: string, change: (o: Obj) => void) => {
      const o = objects.get(key(plural, name));
      if (!o) throw new Error(`no ${plural}/${name}`);
      change(o);
      bump(o);
    },
    backups: () =>
      [...objects.entries()]
        .filter(([k, o]) => k.startsWith('backups/') && !o.metadata.deletionTimestamp)
        .map(([, o]) => `${o.metadata.name}:${String(o.status?.phase ?? '-')}`)
        .sort(),
  };
};

export const scheduleObj = (spec: Record<string, unknown>): Obj => ({
  metadata: {
    name: 'nightly',
    namespace: 'ns',
    uid: 'sched-uid',
    generation: 1,
    creationTimestamp: '2026-01-01T00:00:00Z',
  },
  spec: {
    cluster: { name: 'cache', kind: 'RedisCluster' },
    schedule: '0 3 * * *',
    timeZone: 'UTC',
    suspend: false,
    concurrencyPolicy: 'Forbid',
    startingDeadlineSeconds: 300,
    template: {},
    ...spec,
  },
  ...({ apiVersion: 'tideway.dev/v1alpha1', kind: 'BackupSchedule' } as object),
});

export const backupObj = (
  name: string,
  phase: string | undefined,
  startedAt: Date,
  cluster = 'cache',
): Obj => ({
  ...({ apiVersion: 'tideway.dev/v1alpha1', kind: 'Backup' } as object),
  metadata: {
    name,
    namespace: 'ns',
    uid: `uid-${name}`,
    labels: { 'tideway.dev/schedule': 'nightly', 'tideway.dev/cluster': cluster },
    annotations: { 'tideway.dev/schedule-name': 'nightly', 'tideway.dev/schedule-uid': 'sched-uid' },
  },
  spec: { cluster: { name: cluster } },
  ...(phase ? { status: { phase, startedAt: startedAt.toISOString() } } : {}),
});

export const clusterObj = (name = 'cache'): Obj => ({
  ...({ apiVersion: 'tideway.dev/v1alpha1', kind: 'RedisCluster' } as object),
  metadata: { name, namespace: 'ns', uid: `rc-${name}` },
  spec: {},
});

export const eventOf = (type: string, kind: string, name: string, data: unknown = {}, uid?: string) =>
  ({
    id: `e-${name}`,
    type,
    source: 'test',
    kind,
    namespace: 'ns',
    name,
    ...(uid ? { uid } : {}),
    data,
  }) as unknown as CloudEvent<unknown>;

export const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

/** The run of a per-minute schedule due now. */
export const thisMinute = () => {
  const at = new Date(Date.now() - 2000);
  at.setUTCSeconds(0, 0);
  return at;
};

/**
 * The watcher's tick for the run at `at` of the schedule with `uid`, handled 2 s after it (as
 * ticks arrive). The clock is fixed: on the real one, a run that crossed a minute boundary would
 * find its successor due and skip (Superseded), whatever the test is about.
 */
export const tick = (k: ReturnType<typeof fakeKube>, at: Date, uid = 'sched-uid') => {
  Object.assign(k.ctx, { clock: () => new Date(at.getTime() + 2000) });
  return handler(
    eventOf(
      EventType.scheduleTick,
      'BackupSchedule',
      'nightly',
      { scheduledTime: at.toISOString(), missedBefore: 0 },
      uid,
    ),
    k.ctx,
  );
};
