import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { FailureStatus } from './handler.ts';
import { reportFailure } from './report.ts';

const world = () => {
  const writes: unknown[] = [];
  const events: { regarding: { uid?: string } }[] = [];
  const api = {
    getNamespacedCustomObject: async () => ({
      apiVersion: 'tideway.dev/v1alpha1',
      kind: 'Restore',
      metadata: { name: 'r1', namespace: 'prod', uid: 'u-new', generation: 1 },
      status: { phase: 'SafetyBackup' },
    }),
    replaceNamespacedCustomObjectStatus: async (a: { body: unknown }) => {
      writes.push(a.body);
      return a.body;
    },
    createNamespacedEvent: async (a: { body: { regarding: { uid?: string } } }) => {
      events.push(a.body);
      return {};
    },
  };
  const kc = { makeApiClient: () => api } as unknown as KubeConfig;
  const log = { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} } as never;
  const report = (uid?: string, failureStatus?: FailureStatus, conditionKinds?: string[]) =>
    reportFailure(
      kc,
      'restore',
      {
        kind: 'Restore',
        namespace: 'prod',
        name: 'r1',
        ...(uid ? { uid } : {}),
        conditionType: 'Completed',
        reason: 'RetriesExhausted',
        message: 'gave up',
        ...(conditionKinds ? { conditionKinds } : {}),
      },
      log,
      failureStatus,
    );
  return { writes, events, report };
};

describe('reportFailure', () => {
  it('writes the failure on the object the event was about', async () => {
    const w = world();
    await w.report('u-new');
    expect(w.writes).toHaveLength(1);
    expect(w.events[0]?.regarding.uid).toBe('u-new');
  });

  it('never on another object of the same name (the earlier one was deleted, this one made anew)', async () => {
    const w = world();
    await w.report('u-earlier');
    expect(w.writes).toEqual([]);
    // The Event is about the earlier object, as the failure was.
    expect(w.events[0]?.regarding.uid).toBe('u-earlier');
  });

  it('on whatever has the name when the event named no uid (ticks of kinds without one, outcomes)', async () => {
    const w = world();
    await w.report();
    expect(w.writes).toHaveLength(1);
  });

  it("writes what the handler module's failureStatus makes of the status, the condition already set", async () => {
    const w = world();
    const seen: unknown[] = [];
    await w.report('u-new', (r, status) => {
      seen.push({ r: { kind: r.kind, reason: r.reason }, status });
      return { ...status, phase: 'Failed' };
    });
    expect(seen).toEqual([
      {
        r: { kind: 'Restore', reason: 'RetriesExhausted' },
        status: {
          phase: 'SafetyBackup',
          conditions: [
            expect.objectContaining({ type: 'Completed', status: 'False', reason: 'RetriesExhausted' }),
          ],
        },
      },
    ]);
    expect(w.writes).toEqual([
      expect.objectContaining({ status: expect.objectContaining({ phase: 'Failed' }) }),
    ]);
    // Never on another object of the name.
    const other = world();
    await other.report('u-earlier', (_r, status) => ({ ...status, phase: 'Failed' }));
    expect(other.writes).toEqual([]);
  });

  it('writes no condition on a kind that is not the function’s own (an outcome it acted on), and still records the Event', async () => {
    const w = world();
    await w.report('u-new', undefined, ['Backup']);
    expect(w.writes).toEqual([]);
    expect(w.events).toHaveLength(1);
    expect(w.events[0]?.regarding.uid).toBe('u-new');
    const own = world();
    await own.report('u-new', undefined, ['Restore']);
    expect(own.writes).toHaveLength(1);
  });
});
