import { describe, expect, it } from 'vitest';
import type { Backup } from '../../shared/api/generated.ts';
import type { LoadedBackup } from '../../shared/backup/kube.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { finalizeBackup } from './finalize.ts';

// The finalizer's wait for Restores that use a deleted Backup, on an in-memory API: what it
// lists, the Events it records, the finalizer patch. The store is never reached (no status.store).
const world = (o: { phase: string; attempt: number; maxAttempts?: number; restore?: object }) => {
  const events: string[] = [];
  const patched: unknown[] = [];
  const api = {
    listNamespacedCustomObject: async () => ({ items: o.restore ? [o.restore] : [] }),
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
    spec: { cluster: { name: 'cache' }, deletionPolicy: 'Retain' },
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
  return { ctx, loaded, events, patched };
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
