import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { RedisCluster, Restore } from '../../shared/api/generated.ts';
import { fakeContext, runningSafetyBackup } from './fixture.ts';
import type { LoadedRestore, RestoreStatus } from './kube.ts';
import { safetyBackup } from './phases.ts';
import { refOf } from './restoring.ts';
import type { Run } from './run.ts';
import type { RestoreState } from './state.ts';

const restore = {
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Restore',
  metadata: { name: 'r1', namespace: 'prod', uid: 'u-r1', generation: 1 },
  spec: { cluster: { name: 'main' }, source: { backup: { name: 'b1' } } },
  status: { phase: 'SafetyBackup', safetyBackup: 'r1-safety', startedAt: '2026-11-27T00:00:00Z' },
} as unknown as Restore;

/**
 * One look at the safety backup (unfinished unless `completed`), on delivery `attempt` of
 * `maxAttempts`, on an in-memory API. `states`: the records the run wrote, in order.
 */
const look = async (attempt: number, maxAttempts: number, o: { completed?: boolean } = {}) => {
  const backup = runningSafetyBackup('u-r1');
  if (o.completed) Object.assign(backup.status, { phase: 'Completed' });
  const states: RestoreState[] = [];
  let status: RestoreStatus = structuredClone(restore.status ?? {});
  const api = {
    getNamespacedCustomObject: async (a: { plural: string; name: string }) => {
      if (a.plural === 'backups' && a.name === 'r1-safety') return structuredClone(backup);
      // Its cluster, not marked Restoring: nothing to end there.
      if (a.plural === 'redisclusters' && a.name === 'main')
        return { metadata: { name: 'main', namespace: 'prod', uid: 'u-rc' }, spec: {}, status: {} };
      throw Object.assign(new Error('not found'), { code: 404 });
    },
    createNamespacedEvent: async () => ({}),
  };
  const { ctx, published } = fakeContext(api, { attempt, maxAttempts });
  const loaded = {
    restore,
    key: { namespace: 'prod', name: 'r1' },
    regarding: {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Restore',
      namespace: 'prod',
      name: 'r1',
      uid: 'u-r1',
    },
    state: {},
    writeStatus: async (mutate: (s: RestoreStatus) => RestoreStatus | undefined) => {
      status = mutate(structuredClone(status)) ?? status;
    },
    writeState: async (next: RestoreState) => {
      states.push(structuredClone(next));
      loaded.state = next;
    },
  } as unknown as LoadedRestore;
  const run: Run = {
    ctx,
    event: { source: '/test' } as CloudEvent<unknown>,
    loaded,
    rc: { metadata: { name: 'main', namespace: 'prod', uid: 'u-rc' } } as RedisCluster,
    feedHost: '10.0.0.1',
    maxLoads: 3,
    safetyRecheckMs: 30_000,
  };
  // Completed, it goes on to load, which this in-memory API (no pods) cannot serve: what it
  // recorded before counts.
  const outcome = await safetyBackup(run).catch((e: unknown) => ({ kind: 'threw', error: e }));
  return { outcome, status, published, states };
};

describe('waiting for the safety backup', () => {
  it('looks again while the runtime has retries left', async () => {
    const { outcome, status } = await look(989, 1000);
    expect(outcome).toMatchObject({ kind: 'retry', afterMs: 30_000 });
    expect(status.phase).toBe('SafetyBackup');
  });

  it('ends ten looks before the retries do: Failed, SafetyBackupTimedOut, nothing touched, the outcome published', async () => {
    const { outcome, status, published } = await look(990, 1000);
    expect(outcome).toEqual({ kind: 'done' });
    expect(status).toMatchObject({ phase: 'Failed', error: { reason: 'SafetyBackupTimedOut' } });
    expect(status.error?.message).toMatch(
      /safety backup r1-safety was still Running after 990 looks; nothing was restored/,
    );
    expect(status.conditions?.find((c) => c.type === 'ClusterData')).toMatchObject({ reason: 'Untouched' });
    expect(published).toEqual(['dev.tideway.restore.failed']);
  });

  it('with fewer than 20 retries, ends at half of them, never at the first look', async () => {
    expect((await look(1, 10)).outcome).toMatchObject({ kind: 'retry' });
    expect((await look(4, 10)).outcome).toMatchObject({ kind: 'retry' });
    expect((await look(5, 10)).status).toMatchObject({ error: { reason: 'SafetyBackupTimedOut' } });
  });

  it('records the completed safety backup by uid before a load, and a rollback loads that very Backup', async () => {
    const { states } = await look(3, 1000, { completed: true });
    // The first record the run wrote, before any load was.
    expect(states[0]).toMatchObject({ safety: { name: 'r1-safety', uid: 'u-s' } });
    expect(states[0]?.load).toBeUndefined();
    const loaded = { restore, state: states[0] } as unknown as LoadedRestore;
    expect(refOf({ loaded }, 'rollback')).toEqual({ kind: 'backup', name: 'r1-safety', uid: 'u-s' });
    // A Restore that began before the uid was recorded: the name alone, as before.
    expect(refOf({ loaded: { restore, state: {} } as unknown as LoadedRestore }, 'rollback')).toEqual({
      kind: 'backup',
      name: 'r1-safety',
      uid: '',
    });
  });
});
