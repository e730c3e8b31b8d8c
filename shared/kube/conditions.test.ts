import { describe, expect, it } from 'vitest';
import { setCondition } from './conditions.ts';

describe('setCondition', () => {
  const t1 = new Date('2026-11-22T10:00:00.123Z');
  const t2 = new Date('2026-11-22T11:00:00Z');

  it('adds a condition with lastTransitionTime and observedGeneration', () => {
    const c = setCondition([], { type: 'Ready', status: 'False', reason: 'Creating', message: 'm' }, 3, t1);
    expect(c).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'Creating',
        message: 'm',
        lastTransitionTime: '2026-11-22T10:00:00Z',
        observedGeneration: 3,
      },
    ]);
  });

  it('keeps lastTransitionTime when only reason or message change', () => {
    const a = setCondition([], { type: 'Ready', status: 'False', reason: 'Creating', message: 'm' }, 1, t1);
    const b = setCondition(a, { type: 'Ready', status: 'False', reason: 'Waiting', message: 'n' }, 2, t2);
    expect(b[0]).toMatchObject({
      reason: 'Waiting',
      lastTransitionTime: '2026-11-22T10:00:00Z',
      observedGeneration: 2,
    });
  });

  it('moves lastTransitionTime when the status changes, and leaves other conditions alone', () => {
    const a = setCondition(
      setCondition([], { type: 'Healthy', status: 'True', reason: 'Ok', message: '' }, 1, t1),
      { type: 'Ready', status: 'False', reason: 'Creating', message: '' },
      1,
      t1,
    );
    const b = setCondition(a, { type: 'Ready', status: 'True', reason: 'Ready', message: '' }, 1, t2);
    expect(b.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ['Healthy', 'True', '2026-11-22T10:00:00Z'],
      ['Ready', 'True', '2026-11-22T11:00:00Z'],
    ]);
  });
});
