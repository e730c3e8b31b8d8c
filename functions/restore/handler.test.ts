import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { memoryCustomObjects } from '../../shared/runtime/fixture.ts';
import { lookAtMarkedRestore } from '../health/restore-look.ts';
import { fakeContext, runningSafetyBackup } from './fixture.ts';
import { lookAgain, SETTLE } from './gone.ts';
import { handler } from './index.ts';
import { STATE_ANNOTATION } from './state.ts';

// The restore handler's first decisions, on an in-memory API: which event may drive which Restore,
// and what becomes of one the runtime gave up on.
const world = (o: {
  condition: { reason: string; message: string };
  /** The Restore's phase: SafetyBackup unless said. */
  phase?: 'Verifying' | 'SafetyBackup' | 'Restoring';
  /** The cluster carries Restoring=True naming r1 (a run marked it), or `markedFor`. */
  marked?: boolean;
  markedFor?: string;
  /** The Restore's state annotation (its record of a load). */
  state?: Record<string, unknown>;
  /** A later Restore r2 of main (made at 07:55, r1 at 06:00; the clock says 08:00), and Backup b1. */
  later?: boolean;
  /** The cluster is being deleted. */
  clusterDeleting?: boolean;
}) => {
  const objects = memoryCustomObjects();
  let probesFail = false;
  const put = objects.put;
  put('restores', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Restore',
    metadata: {
      name: 'r1',
      namespace: 'prod',
      uid: 'u-now',
      generation: 1,
      resourceVersion: '5',
      creationTimestamp: '2026-11-27T06:00:00Z',
      ...(o.state ? { annotations: { [STATE_ANNOTATION]: JSON.stringify(o.state) } } : {}),
    },
    spec: { cluster: { name: 'main' }, source: { backup: { name: 'b1' } } },
    status: {
      phase: o.phase ?? 'SafetyBackup',
      safetyBackup: 'r1-safety',
      startedAt: '2026-11-27T00:00:00Z',
      conditions: [
        { type: 'Completed', status: 'False', lastTransitionTime: '2026-11-27T00:00:00Z', ...o.condition },
      ],
    },
  } as never);
  put('redisclusters', {
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: {
      name: 'main',
      namespace: 'prod',
      uid: 'u-rc',
      ...(o.clusterDeleting ? { deletionTimestamp: '2026-11-27T07:59:00Z' } : {}),
    },
    spec: {},
    status: o.marked
      ? {
          conditions: [
            {
              type: 'Restoring',
              status: 'True',
              reason: 'Restoring',
              message: `Restore ${o.markedFor ?? 'r1'} loads backup b1`,
              lastTransitionTime: '2026-11-27T00:00:00Z',
            },
          ],
        }
      : {},
  } as never);
  // Unfinished: a run of r1 on its own events looks and waits.
  put('backups', runningSafetyBackup('u-now'));
  if (o.later) {
    put('restores', {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Restore',
      metadata: { name: 'r2', namespace: 'prod', uid: 'u-r2', creationTimestamp: '2026-11-27T07:55:00Z' },
      spec: { cluster: { name: 'main' }, source: { backup: { name: 'b1' } } },
    } as never);
    put('backups', {
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Backup',
      metadata: { name: 'b1', namespace: 'prod', uid: 'u-b1' },
      spec: { cluster: { name: 'main' } },
      status: { phase: 'Completed' },
    } as never);
  }
  const api = {
    ...objects.api,
    createNamespacedEvent: async () => ({}),
    // The cluster's password Secret, and no pods: a load's target does not answer.
    readNamespacedSecret: async (a: { name: string }) => ({
      metadata: {
        name: a.name,
        namespace: 'prod',
        ownerReferences: [
          {
            apiVersion: 'tideway.dev/v1alpha1',
            kind: 'RedisCluster',
            name: 'main',
            uid: 'u-rc',
            controller: true,
          },
        ],
      },
      data: { password: Buffer.from('pw').toString('base64') },
    }),
    listNamespacedPod: async () => {
      if (probesFail) throw new Error('the cluster was probed');
      return { items: [] };
    },
  };
  const { ctx, published } = fakeContext(api, {
    env: { TIDEWAY_RESTORE_FEED_HOST: '10.0.0.1', TIDEWAY_RESTORE_SAFETY_RECHECK_MS: '30000' },
  });
  const event = (uid: string, name = 'r1') =>
    ({
      id: 'e1',
      type: 'dev.tideway.resource.updated',
      source: '/watcher',
      kind: 'Restore',
      namespace: 'prod',
      name,
      cluster: 'main',
      uid,
    }) as unknown as CloudEvent<unknown>;
  const status = (name = 'r1') =>
    (objects.get('restores', name) as { status: Record<string, unknown> }).status;
  const state = () =>
    JSON.parse(
      (objects.get('restores', 'r1') as { metadata: { annotations?: Record<string, string> } }).metadata
        .annotations?.[STATE_ANNOTATION] ?? '{}',
    ) as Record<string, unknown>;
  const restoring = () =>
    (
      objects.get('redisclusters', 'main') as { status: { conditions?: { type: string; status: string }[] } }
    ).status.conditions?.find((c) => c.type === 'Restoring');
  /** The watcher's deleted event of an earlier r1 (uid u-earlier), with its last state; it loaded nothing. */
  const deletedEarlier = () =>
    ({
      id: 'e-deleted',
      type: 'dev.tideway.resource.deleted',
      source: '/watcher',
      kind: 'Restore',
      namespace: 'prod',
      name: 'r1',
      cluster: 'main',
      uid: 'u-earlier',
      data: {
        object: {
          apiVersion: 'tideway.dev/v1alpha1',
          kind: 'Restore',
          metadata: { name: 'r1', namespace: 'prod', uid: 'u-earlier' },
          spec: { cluster: { name: 'main' }, source: { backup: { name: 'b1' } } },
          status: { phase: 'Verifying' },
        },
      },
    }) as unknown as CloudEvent<unknown>;
  const failProbes = () => {
    probesFail = true;
  };
  /** Health's look at the Restore the cluster's mark names, as health publishes it. */
  const look = async () => {
    const events: CloudEvent<unknown>[] = [];
    const rc = objects.get('redisclusters', 'main') as RedisCluster;
    const publisher = {
      publish: async (e: CloudEvent<unknown>) => ({ duplicate: false, seq: events.push(e) }),
    };
    await lookAtMarkedRestore({ clock: () => new Date('2026-11-27T08:00:00Z'), publisher }, rc, '/health');
    return events;
  };
  return { ctx, event, look, status, state, published, restoring, deletedEarlier, failProbes };
};

/** A load of r1's backup into main-0, as its record keeps it. */
const LOAD = {
  of: 'restore',
  attempt: 1,
  replid: 'a'.repeat(40),
  pod: 'main-0',
  feedHost: '10.0.0.1',
  delivered: false,
  before: { runId: 'r', replid: 'b'.repeat(40), offset: 0, keys: 0 },
  rdbSize: 0,
  startedAt: '2026-11-27T07:00:00Z',
};

const waiting = {
  reason: 'SafetyBackup',
  message: 'backing up the current data into Backup r1-safety first',
};

describe('the restore handler', () => {
  it('looks at its own Restore on its own events: waiting for the safety backup, it looks again later', async () => {
    const w = world({ condition: waiting });
    expect(await handler(w.event('u-now'), w.ctx)).toMatchObject({ kind: 'retry', reason: 'SafetyBackup' });
  });

  it('takes no event of an earlier Restore of the same name as its own (their retries are not its)', async () => {
    const w = world({ condition: waiting });
    Object.assign(w.ctx, { attempt: 995 });
    // On its own events, the 995th look ends the wait; on the earlier one's, nothing happens.
    expect(await handler(w.event('u-earlier'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({ phase: 'SafetyBackup' });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({ phase: 'Failed', error: { reason: 'SafetyBackupTimedOut' } });
  });

  it('ends a Restore the runtime gave up on in SafetyBackup: Failed with that reason, nothing touched, never loaded', async () => {
    const w = world({
      condition: { reason: 'RetriesExhausted', message: 'gave up after 1000 attempts: SafetyBackup' },
    });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({
      phase: 'Failed',
      error: {
        reason: 'RetriesExhausted',
        message: 'gave up after 1000 attempts: SafetyBackup; nothing was restored: create the Restore again',
      },
    });
    expect(w.published).toEqual(['dev.tideway.restore.failed']);
  });

  it('ending a Restore given up on also ends the mark it left on its cluster (a run stopped between the two)', async () => {
    const w = world({ condition: { reason: 'RetriesExhausted', message: 'gave up' }, marked: true });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.restoring()).toMatchObject({ status: 'False', reason: 'RestoreFailed' });
  });

  it('ends one given up on in Verifying or Restoring at its next run too, never loading; given up mid-load, it says the data is unknown', async () => {
    // The in-memory API has no pods: a run that went on to verify or load would throw.
    const verifying = world({
      phase: 'Verifying',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
    });
    expect(await handler(verifying.event('u-now'), verifying.ctx)).toEqual({ kind: 'done' });
    expect(verifying.status()).toMatchObject({
      phase: 'Failed',
      error: {
        reason: 'RetriesExhausted',
        message: 'gave up; nothing was restored: create the Restore again',
      },
      conditions: expect.arrayContaining([
        expect.objectContaining({
          type: 'Completed',
          message: expect.stringMatching(/^failed at Verifying: /),
        }),
        expect.objectContaining({ type: 'ClusterData', status: 'False', reason: 'Untouched' }),
      ]),
    });
    const loading = world({
      phase: 'Restoring',
      condition: { reason: 'LoadCrashed', message: 'the handler threw' },
      marked: true,
    });
    expect(await handler(loading.event('u-now'), loading.ctx)).toEqual({ kind: 'done' });
    expect(loading.status()).toMatchObject({
      phase: 'Failed',
      error: { reason: 'LoadCrashed' },
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: 'ClusterData', status: 'Unknown', reason: 'Interrupted' }),
      ]),
    });
    expect(loading.restoring()).toMatchObject({ status: 'False', reason: 'RestoreFailed' });
    expect(loading.published).toEqual(['dev.tideway.restore.failed']);
  });

  it('runs on health’s look at the Restore its cluster’s mark names: one given up on is ended with no event of its own', async () => {
    const w = world({
      phase: 'Restoring',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
      marked: true,
    });
    const [look] = await w.look();
    expect(await handler(look!, w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({ phase: 'Failed', error: { reason: 'RetriesExhausted' } });
    expect(w.restoring()).toMatchObject({ status: 'False', reason: 'RestoreFailed' });
    expect(w.published).toEqual(['dev.tideway.restore.failed']);
  });

  it('…a look at one that goes on is one run more of it, never retried on its own; a look at one that is gone does nothing', async () => {
    const going = world({ condition: waiting, marked: true });
    const [look] = await going.look();
    // The run asks to look again later (its safety backup runs): its own deliveries do; the look is done.
    expect(await handler(going.event('u-now'), going.ctx)).toMatchObject({
      kind: 'retry',
      reason: 'SafetyBackup',
    });
    expect(await handler(look!, going.ctx)).toEqual({ kind: 'done' });
    expect(going.status()).toMatchObject({ phase: 'SafetyBackup' });
    const gone = world({ condition: waiting, marked: true, markedFor: 'r9' });
    const [other] = await gone.look();
    expect(await handler(other!, gone.ctx)).toEqual({ kind: 'done' });
    expect(gone.status()).toMatchObject({ phase: 'SafetyBackup' });
    expect(gone.published).toEqual([]);
  });

  it('given up on mid-load, settles the load its cluster’s mark names first: a target that does not answer is looked at again, the Restore left active', async () => {
    const givenUpAt = (at: string) =>
      world({
        phase: 'Restoring',
        condition: { reason: 'RetriesExhausted', message: 'gave up', lastTransitionTime: at } as never,
        marked: true,
        state: { load: { ...LOAD, delivered: true } },
      });
    // Given up 2 minutes ago (the clock says 08:00).
    const w = givenUpAt('2026-11-27T07:58:00Z');
    expect(await handler(w.event('u-now'), w.ctx)).toMatchObject({
      kind: 'retry',
      reason: 'SettlingLoad: the master does not answer',
    });
    expect(w.status()).toMatchObject({ phase: 'Restoring' });
    expect(w.restoring()).toMatchObject({ status: 'True' });
    // Given up 10 minutes ago or more: the looks end, however many runs came (health's looks are
    // each a first attempt), with what is known.
    const late = givenUpAt('2026-11-27T07:50:00Z');
    expect(await handler(late.event('u-now'), late.ctx)).toEqual({ kind: 'done' });
    expect(late.status()).toMatchObject({
      phase: 'Failed',
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: 'ClusterData', status: 'Unknown', reason: 'Interrupted' }),
      ]),
    });
  });

  it('…and leaves a load alone that the mark does not name: ended, saying so, the cluster never probed', async () => {
    const w = world({
      phase: 'Restoring',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
      marked: true,
      markedFor: 'r2',
      state: { load: { ...LOAD, delivered: true } },
    });
    w.failProbes();
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({
      phase: 'Failed',
      error: {
        message:
          'gave up; the restore function stopped during a load: its load was left as it was (the cluster’s Restoring condition does not name this Restore); check the data, or restore again',
      },
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: 'ClusterData', reason: 'Interrupted' }),
      ]),
    });
  });

  it('a Restore given up on before it loaded blocks no later one, though a run ends it after that one was made', async () => {
    const w = world({
      phase: 'Verifying',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
      later: true,
    });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    // Finished at 08:00, after r2 was made (07:55): its state says it had stopped running before.
    expect(w.status()).toMatchObject({ phase: 'Failed', completedAt: '2026-11-27T08:00:00Z' });
    expect(w.state()).toMatchObject({ givenUp: { at: 'Verifying' } });
    await handler(w.event('u-r2', 'r2'), w.ctx);
    // r2 goes on: it waits for a master to verify against (the in-memory cluster has none).
    expect(w.status('r2')).toMatchObject({ phase: 'Verifying' });
  });

  it('…also when its cluster is being deleted as that run ends it', async () => {
    const w = world({
      phase: 'SafetyBackup',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
      clusterDeleting: true,
    });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.status()).toMatchObject({ phase: 'Failed', error: { reason: 'ClusterDeleting' } });
    expect(w.state()).toMatchObject({ givenUp: { at: 'SafetyBackup' } });
  });

  it('…while one given up on mid-load blocks those made before its load was settled', async () => {
    const w = world({
      phase: 'Restoring',
      condition: { reason: 'RetriesExhausted', message: 'gave up' },
      marked: true,
      markedFor: 'r9',
      state: { load: LOAD },
      later: true,
    });
    expect(await handler(w.event('u-now'), w.ctx)).toEqual({ kind: 'done' });
    expect(w.state()).not.toHaveProperty('givenUp');
    await handler(w.event('u-r2', 'r2'), w.ctx);
    expect(w.status('r2')).toMatchObject({ phase: 'Failed', error: { reason: 'RestoreInProgress' } });
  });

  it("an earlier Restore's deletion ends its mark on the cluster, though a new one of the name exists that loaded nothing", async () => {
    const w = world({ condition: waiting, marked: true });
    expect(await handler(w.deletedEarlier(), w.ctx)).toEqual({ kind: 'done' });
    expect(w.restoring()).toMatchObject({ status: 'False', reason: 'RestoreDeleted' });
    expect(w.status()).toMatchObject({ phase: 'SafetyBackup' });
  });

  it('…but not once the new one has loaded: the mark, found by name, is then the new one’s', async () => {
    const w = world({ condition: waiting, marked: true, state: { load: LOAD } });
    expect(await handler(w.deletedEarlier(), w.ctx)).toEqual({ kind: 'done' });
    expect(w.restoring()).toMatchObject({ status: 'True' });
  });

  it('looks again at a settling load’s target while it loads or does not answer, for 120 looks at most', () => {
    const at = (attempt: number, maxAttempts = 1000) => ({ attempt, maxAttempts });
    for (const v of ['loading', 'unreachable'] as const) {
      expect(lookAgain(v, at(1)), v).toBe(true);
      expect(lookAgain(v, at(SETTLE.looks - 1)), v).toBe(true);
      expect(lookAgain(v, at(SETTLE.looks)), v).toBe(false);
      // Never past the delivery's last retry: the end is then said, not lost.
      expect(lookAgain(v, at(9, 10)), v).toBe(false);
    }
    for (const v of ['loaded', 'untouched', 'unknown'] as const) expect(lookAgain(v, at(1)), v).toBe(false);
    expect(SETTLE.looks * SETTLE.recheckMs).toBe(10 * 60_000);
  });
});
