import { describe, expect, it } from 'vitest';
import { MAX_WAIT_RETRIES, requeueAfterMs } from './requeue.ts';

const wait = (reason: string) => ({ kind: 'wait', reason, message: '' }) as const;

describe('requeueAfterMs', () => {
  it('does not come back when converged, and soon when the step budget ran out mid-way', () => {
    expect(requeueAfterMs({ kind: 'converged' }, 1)).toBeUndefined();
    expect(requeueAfterMs({ kind: 'addLearner', member: 'e-3' }, 1)).toBe(200);
    expect(requeueAfterMs({ kind: 'addLearner', member: 'e-3' }, 1, true)).toBe(200);
  });

  it('never retries a wait at the step pace: a wait on a person backs off to a minute', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((a) => requeueAfterMs(wait('VolumeConflict'), a));
    expect(delays).toEqual([5000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000, 60_000]);
    expect(requeueAfterMs(wait('PodConflict'), 1)).toBe(5000);
    expect(requeueAfterMs(wait('MembersUnhealthy'), 3)).toBe(20_000);
  });

  it('comes back sooner for etcd’s own progress, which no Kubernetes event announces', () => {
    const delays = [1, 2, 3, 4, 8].map((a) => requeueAfterMs(wait('LearnerCatchingUp'), a));
    expect(delays).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(requeueAfterMs(wait('Defragmenting'), 1)).toBe(1000);
  });

  it('leaves a wait to the next tick: in a tick’s own run, and after a few redeliveries of a change', () => {
    expect(requeueAfterMs(wait('LearnerCatchingUp'), 1, true)).toBeUndefined();
    expect(requeueAfterMs(wait('VolumeConflict'), 1, true)).toBeUndefined();
    expect(requeueAfterMs(wait('VolumeConflict'), MAX_WAIT_RETRIES + 1)).toBeUndefined();
    expect(requeueAfterMs(wait('VolumeConflict'), 1000)).toBeUndefined();
  });

  it('reads a bad attempt count as the first', () => {
    expect(requeueAfterMs(wait('Alarm'), 0)).toBe(5000);
    expect(requeueAfterMs(wait('Alarm'), Number.NaN)).toBe(5000);
  });
});
