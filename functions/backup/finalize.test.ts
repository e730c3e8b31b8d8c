import { describe, expect, it } from 'vitest';
import type { Backup } from '../../shared/api/generated.ts';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { finalizeBackup } from './finalize.ts';

// The finalizer's wait for Restores that use a deleted Backup, on an in-memory API: what it
// lists, the Events it records, the finalizer patch. The store is never reached (no status.store).
const world = (o: {
  phase: string;
  attempt: number;
  maxAttempts?: number;
  restore?: object;
  etcd?: object;
  /** The Backup's cluster kind: a RedisCluster's unless said. */
  kind?: 'EtcdCluster';
}) => {
  const listed: string[] = [];
  const events: string[] = [];
  const patched: unknown[] = [];
  const api = {
    listNamespacedCustomObject: async (a: { plural: string }) => {
      listed.push(a.plural);
      return { items: a.plural === 'restores' ? (o.restore ? [o.restore] : []) : o.etcd ? [o.etcd] : [] };
    },
    createNamespacedEvent: async (a: { body: { reason: string } }) => {
      events.push(a.body.reason);
      return {};
    },
    patchNamespacedCustomObject: async (a: { body: unknown }) => {
      patched.push(a.body);
      return {};
    },
  };
  const ctx = {
    kube: { makeApiClient: () => api },
    function: 'backup',
    attempt: o.attempt,
    maxAttempts: o.maxAttempts ?? 200,
    env: {},
    fence: () => undefined,
    log: { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} },
  } as unknown as HandlerContext;
  const backup = {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Backup',
    metadata: {
      name: 'nightly',
      namespace: 'ns',
      uid: 'u-1',
      resourceVersion: '7',
      deletionTimestamp: '2026-11-27T08:00:00Z',
      finalizers: ['tideway.dev/backup-object'],
    },
    spec: { cluster: { name: 'cache', ...(o.kind ? { kind: o.kind } : {}) }, deletionPolicy: 'Retain' },
    status: { phase: o.phase },
  } as unknown as Backup;
  const loaded = {
    backup,
    key: { namespace: 'ns', name: 'nightly' },
    regarding: {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Backup',
      namespace: 'ns',
      name: 'nightly',
      uid: 'u-1',
    },
  } as unknown as LoadedBackup;
  return { ctx, loaded, events, patched, listed };
};
const restoring = {
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Restore',
  metadata: { name: 'r1', namespace: 'ns' },
  spec: { cluster: { name: 'cache' }, source: { backup: { name: 'nightly' } } },
  status: { phase: 'Restoring' },
};

describe('a deleted Backup that a Restore uses', () => {
  it('is kept, looked at again every 30 s for 20 looks, then every 5 minutes', async () => {
    const w = world({ phase: 'Completed', attempt: 1, restore: restoring });
    expect(await finalizeBackup(w.loaded, w.ctx)).toMatchObject({ kind: 'retry', afterMs: 30_000 });
    expect(w.events).toEqual(['InUse']);
    expect(w.patched).toEqual([]);
    const later = world({ phase: 'Completed', attempt: 21, restore: restoring });
    expect(await finalizeBackup(later.loaded, later.ctx)).toMatchObject({ kind: 'retry', afterMs: 300_000 });
  });

  it('is deleted after the function’s retries, with a Warning: a deletion never hangs for good', async () => {
    const w = world({ phase: 'Completed', attempt: 199, maxAttempts: 200, restore: restoring });
    expect(await finalizeBackup(w.loaded, w.ctx)).toMatchObject({ kind: 'done' });
    expect(w.events).toContain('InUseGaveUp');
    expect(w.patched).toEqual([{ metadata: { finalizers: [], resourceVersion: '7' } }]);
  });

  it('is kept while a new EtcdCluster starts from it, not once that cluster formed', async () => {
    const starting = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'EtcdCluster',
      metadata: { name: 'meta', namespace: 'ns' },
      spec: { bootstrap: { fromBackup: { name: 'nightly' } } },
      status: { bootstrap: { backup: 'nightly', backupUid: 'u-1' } },
    };
    const w = world({ phase: 'Completed', attempt: 1, etcd: starting, kind: 'EtcdCluster' });
    expect(await finalizeBackup(w.loaded, w.ctx)).toMatchObject({
      kind: 'retry',
      reason: 'InUse: EtcdCluster meta',
    });
    expect(w.events).toEqual(['InUse']);
    expect(w.patched).toEqual([]);
    const formed = world({
      phase: 'Completed',
      attempt: 1,
      etcd: { ...starting, status: { ...starting.status, clusterID: 'c1' } },
      kind: 'EtcdCluster',
    });
    expect(await finalizeBackup(formed.loaded, formed.ctx)).toMatchObject({ kind: 'done' });
    // A RedisCluster's backup starts no EtcdCluster (WrongClusterKind): none is even listed.
    const redis = world({ phase: 'Completed', attempt: 1, etcd: starting });
    expect(await finalizeBackup(redis.loaded, redis.ctx)).toMatchObject({ kind: 'done' });
    expect(redis.listed).toEqual(['restores', 'redisclusters']);
  });

  it('is kept while a new RedisCluster waits to load it, before its load has a Restore', async () => {
    const waiting = {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'RedisCluster',
      metadata: { name: 'staging', namespace: 'ns' },
      spec: { bootstrap: { fromBackup: { name: 'nightly' } } },
    };
    const w = world({ phase: 'Completed', attempt: 1, etcd: waiting });
    expect(await finalizeBackup(w.loaded, w.ctx)).toMatchObject({
      kind: 'retry',
      reason: 'InUse: RedisCluster staging',
    });
    const loaded = world({
      phase: 'Completed',
      attempt: 1,
      etcd: { ...waiting, status: { bootstrap: { completedAt: '2026-11-28T00:00:00Z' } } },
    });
    expect(await finalizeBackup(loaded.loaded, loaded.ctx)).toMatchObject({ kind: 'done' });
  });

  it('is not kept while unfinished (its restore waits for it: both would wait), nor once the Restore ended', async () => {
    const running = world({ phase: 'Running', attempt: 1, restore: restoring });
    expect(await finalizeBackup(running.loaded, running.ctx)).toMatchObject({ kind: 'done' });
    expect(running.patched).toHaveLength(1);
    const ended = world({
      phase: 'Completed',
      attempt: 1,
      restore: { ...restoring, status: { phase: 'Failed' } },
    });
    expect(await finalizeBackup(ended.loaded, ended.ctx)).toMatchObject({ kind: 'done' });
    expect(ended.events).not.toContain('InUse');
  });
});

// The stored object's deletion, with a store of its own: decided once, by resourceVersion, so that
// a deletionPolicy changed meanwhile is never overrun.
const stored = (o: {
  policy: 'Delete' | 'Retain';
  decided?: boolean;
  changedMeanwhile?: boolean;
  /** Whether the object is still in the store (an earlier look may have deleted it). */
  present?: boolean;
}) => {
  const w = world({ phase: 'Completed', attempt: 1 });
  const deleted: string[] = [];
  const patches: { metadata: Record<string, unknown> }[] = [];
  const backup = w.loaded.backup;
  backup.spec = { ...backup.spec, deletionPolicy: o.policy };
  backup.status = {
    ...backup.status,
    store: { s3: { bucket: 'b', prefix: 'p', credentialsSecret: { name: 'creds' } }, compression: 'zstd' },
  } as never;
  if (o.decided) backup.metadata.annotations = { 'tideway.dev/deleting-object': '2026-11-27T07:00:00Z' };
  Object.assign(w.ctx, { clock: () => new Date('2026-11-27T08:00:00Z') });
  const api = (w.ctx.kube.makeApiClient as () => Record<string, unknown>)();
  api.patchNamespacedCustomObject = async (a: { body: { metadata: Record<string, unknown> } }) => {
    patches.push(a.body);
    if (a.body.metadata.annotations && o.changedMeanwhile)
      throw Object.assign(new Error('conflict'), { code: 409 });
    return {
      ...backup,
      metadata: { ...backup.metadata, resourceVersion: '8', annotations: a.body.metadata.annotations },
    };
  };
  const resolve = async () => ({
    store: {
      url: (k: string) => `s3://b/${k}`,
      abortUnfinished: async () => {},
      delete: async (k: string) => void deleted.push(k),
      head: async () => (o.present === false ? undefined : { size: 10 }),
    },
  });
  const finalize = () => finalizeBackup(w.loaded, w.ctx, { resolveStore: resolve as never });
  return { ...w, deleted, patches, finalize };
};

describe('a deleted Backup’s stored object', () => {
  it('with Delete: the decision is written by resourceVersion, then the object and manifest go, then the finalizer', async () => {
    const s = stored({ policy: 'Delete' });
    expect(await s.finalize()).toMatchObject({ kind: 'done' });
    expect(s.patches).toEqual([
      {
        metadata: {
          resourceVersion: '7',
          annotations: { 'tideway.dev/deleting-object': '2026-11-27T08:00:00Z' },
        },
      },
      { metadata: { finalizers: [], resourceVersion: '8' } },
    ]);
    expect(s.deleted).toHaveLength(2);
    expect(s.events).toEqual(['Deleted']);
  });

  it('changed since it was read (deletionPolicy Retain set meanwhile): nothing deleted, the next look decides', async () => {
    const s = stored({ policy: 'Delete', changedMeanwhile: true });
    expect(await s.finalize()).toMatchObject({ kind: 'retry', reason: 'BackupChanged' });
    expect(s.deleted).toEqual([]);
    expect(s.patches).toHaveLength(1);
  });

  it('with Retain: it stays, and the Event says so', async () => {
    const s = stored({ policy: 'Retain' });
    expect(await s.finalize()).toMatchObject({ kind: 'done' });
    expect(s.deleted).toEqual([]);
    expect(s.events).toEqual(['Retained']);
  });

  it('decided by an earlier look, then Retain set while the store did not answer: the object, still there, stays', async () => {
    const s = stored({ policy: 'Retain', decided: true });
    expect(await s.finalize()).toMatchObject({ kind: 'done' });
    expect(s.deleted).toEqual([]);
    expect(s.events).toEqual(['Retained']);
  });

  it('decided by an earlier look that deleted the object: its manifest goes too, and it is never said to be retained', async () => {
    const s = stored({ policy: 'Retain', decided: true, present: false });
    expect(await s.finalize()).toMatchObject({ kind: 'done' });
    expect(s.deleted).toHaveLength(2);
    expect(s.events).toEqual(['Deleted']);
  });

  it('decided by an earlier look, Delete still: deleted again (a missing object is no error), no second decision', async () => {
    const s = stored({ policy: 'Delete', decided: true, present: false });
    expect(await s.finalize()).toMatchObject({ kind: 'done' });
    expect(s.deleted).toHaveLength(2);
    expect(s.patches).toEqual([{ metadata: { finalizers: [], resourceVersion: '7' } }]);
  });
});
