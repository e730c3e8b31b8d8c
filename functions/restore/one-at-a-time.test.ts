import { describe, expect, it } from 'vitest';
import type { Restore } from '../../shared/api/generated.ts';
import { runningAtCreation } from './one-at-a-time.ts';
import { STATE_ANNOTATION } from './state.ts';

const restore = (name: string, created: string, status?: Restore['status']): Restore => ({
  apiVersion: 'tideway.dev/v1alpha1',
  kind: 'Restore',
  metadata: { name, creationTimestamp: created },
  spec: { cluster: { name: 'cache' }, source: { latest: true } },
  ...(status ? { status } : {}),
});

describe('one restore per cluster at a time', () => {
  const mine = restore('mine', '2026-11-23T10:00:05Z');

  it('an older Restore that has not finished blocks a newer one, whatever its phase', () => {
    for (const phase of [undefined, 'Pending', 'Verifying', 'SafetyBackup', 'Restoring'] as const)
      expect(
        runningAtCreation(restore('old', '2026-11-23T10:00:00Z', phase ? { phase } : undefined), mine),
      ).toBe(true);
  });

  it('an older Restore that finished after the newer was made blocks it too (its run held the lock meanwhile)', () => {
    const old = restore('old', '2026-11-23T10:00:00Z', {
      phase: 'Completed',
      completedAt: '2026-11-23T10:00:09Z',
    });
    expect(runningAtCreation(old, mine)).toBe(true);
  });

  it('an older Restore that had finished before does not', () => {
    for (const phase of ['Completed', 'Failed', 'RolledBack'] as const)
      expect(
        runningAtCreation(
          restore('old', '2026-11-23T09:00:00Z', { phase, completedAt: '2026-11-23T09:10:00Z' }),
          mine,
        ),
      ).toBe(false);
  });

  it('an older Restore the runtime gave up on does not: nothing runs for it any more — unless it left a load to settle', () => {
    for (const phase of [undefined, 'Pending', 'Verifying', 'SafetyBackup', 'Restoring'] as const) {
      const given = restore('old', '2026-11-23T10:00:00Z', {
        ...(phase ? { phase } : {}),
        conditions: [
          {
            type: 'Completed',
            status: 'False',
            reason: 'RetriesExhausted',
            message: 'the handler did not finish in 1000 attempts',
            lastTransitionTime: '2026-11-23T10:00:01Z',
          },
        ],
      });
      expect(runningAtCreation(given, mine), `phase ${phase}`).toBe(phase === 'Restoring');
    }
  });

  it('…nor once a run ended it, if it was given up on before it loaded: it had stopped running before it finished', () => {
    const ended = (state?: string) => ({
      ...restore('old', '2026-11-23T10:00:00Z', { phase: 'Failed', completedAt: '2026-11-23T11:00:00Z' }),
      ...(state
        ? {
            metadata: {
              name: 'old',
              creationTimestamp: '2026-11-23T10:00:00Z',
              annotations: { [STATE_ANNOTATION]: state },
            },
          }
        : {}),
    });
    expect(runningAtCreation(ended(JSON.stringify({ givenUp: { at: 'SafetyBackup' } })), mine)).toBe(false);
    // Written by hand on one that completed: a given-up Restore never does.
    const completed = ended(JSON.stringify({ givenUp: { at: 'SafetyBackup' } }));
    expect(
      runningAtCreation({ ...completed, status: { ...completed.status, phase: 'Completed' } }, mine),
    ).toBe(true);
    // Finished after this one was made, with no such record (or none readable): it ran till then.
    expect(runningAtCreation(ended(), mine)).toBe(true);
    expect(runningAtCreation(ended(JSON.stringify({ loads: 1 })), mine)).toBe(true);
    expect(runningAtCreation(ended('{not json'), mine)).toBe(true);
  });

  it('a newer Restore never blocks an older one; made in the same second, the name decides', () => {
    expect(runningAtCreation(restore('new', '2026-11-23T10:00:09Z'), mine)).toBe(false);
    const a = restore('a', '2026-11-23T10:00:05Z');
    const b = restore('b', '2026-11-23T10:00:05Z');
    expect(runningAtCreation(a, b)).toBe(true);
    expect(runningAtCreation(b, a)).toBe(false);
  });
});
