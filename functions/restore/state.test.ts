import { describe, expect, it } from 'vitest';
import { emptyState, type RestoreState, STATE_ANNOTATION, serializeState, stateOf } from './state.ts';

describe('restore state (annotation)', () => {
  it('starts empty and reads back what was written', () => {
    expect(stateOf(undefined)).toEqual(emptyState());
    const s: RestoreState = {
      ...emptyState(),
      source: { kind: 'backup', name: 'b1', uid: 'u' },
      loads: 2,
      load: {
        of: 'restore',
        attempt: 2,
        replid: 'f'.repeat(40),
        pod: 'cache-0',
        feedHost: '10.0.0.1',
        delivered: true,
        before: { runId: 'r', replid: 'a'.repeat(40), offset: 10, keys: 3, disklessLoad: 'disabled' },
        rdbSize: 100,
        startedAt: '2026-11-23T10:00:00Z',
      },
    };
    expect(stateOf({ [STATE_ANNOTATION]: serializeState(s) })).toEqual(s);
  });

  it('refuses an edited record with an error that names the annotation and is not retried', () => {
    for (const bad of ['not json', '{"loads":-1}', '{"load":{"of":"restore"}}']) {
      let caught: unknown;
      try {
        stateOf({ [STATE_ANNOTATION]: bad });
      } catch (error) {
        caught = error;
      }
      expect(caught, bad).toMatchObject({ reason: 'StateUnreadable', retry: false });
      expect(String((caught as Error).message)).toContain(STATE_ANNOTATION);
    }
  });
});
