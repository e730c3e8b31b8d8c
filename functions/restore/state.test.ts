import { describe, expect, it } from 'vitest';
import {
  emptyState,
  type Load,
  loadFailure,
  type RestoreState,
  STATE_ANNOTATION,
  serializeState,
  stateOf,
} from './state.ts';

const aLoad: Load = {
  of: 'restore',
  attempt: 1,
  replid: 'f'.repeat(40),
  pod: 'cache-0',
  feedHost: '10.0.0.1',
  delivered: true,
  before: { runId: 'r', replid: 'a'.repeat(40), offset: 10, keys: 3, disklessLoad: 'disabled' },
  rdbSize: 100,
  startedAt: '2026-11-23T10:00:00Z',
};

describe('restore state (annotation)', () => {
  it('starts empty and reads back what was written', () => {
    expect(stateOf(undefined)).toEqual(emptyState());
    const s: RestoreState = {
      ...emptyState(),
      source: { kind: 'backup', name: 'b1', uid: 'u' },
      loads: 2,
      load: { ...aLoad, attempt: 2, guard: { sourceMaxmemory: 0 } },
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

describe("a load's failure", () => {
  const load = aLoad;
  it('is the refusal recorded before a stop, over any error seen after it; else the error this run saw', () => {
    const refused = { ...load, refused: { reason: 'ExceedsMaxmemory', message: 'counts 80 MiB' } };
    // Read back from the annotation, as a redelivered run does.
    const again = stateOf({ [STATE_ANNOTATION]: serializeState({ ...emptyState(), load: refused }) }).load;
    expect(again && loadFailure(again, undefined)).toEqual({
      reason: 'ExceedsMaxmemory',
      message: 'counts 80 MiB',
      retry: false,
    });
    // Recorded, it wins over any later error (a failed write of the record, retried, then done).
    const seen = { reason: 'Conflict', message: 'the object was modified', retry: true };
    expect(loadFailure(refused, seen)).toMatchObject({ reason: 'ExceedsMaxmemory', retry: false });
    expect(loadFailure(load, seen)).toBe(seen);
    expect(loadFailure(load, undefined)).toBeUndefined();
  });
});
