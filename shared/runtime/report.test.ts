import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
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
  const report = (uid?: string) =>
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
      },
      log,
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
});
