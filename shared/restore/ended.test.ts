import { describe, expect, it } from 'vitest';
import type { Restore } from '../api/generated.ts';
import { givenUp, isActive } from './ended.ts';

const PHASES = [undefined, 'Pending', 'Verifying', 'SafetyBackup', 'Restoring'] as const;

const restore = (phase: (typeof PHASES)[number] | 'Failed', reason?: string): Pick<Restore, 'status'> => ({
  status: {
    ...(phase ? { phase } : {}),
    ...(reason
      ? {
          conditions: [
            {
              type: 'Completed',
              status: 'False',
              reason,
              message: 'm',
              lastTransitionTime: '2026-11-28T00:00:00Z',
            },
          ],
        }
      : {}),
  } as Restore['status'],
});

describe('a Restore the runtime gave up on', () => {
  it('is found in every unfinished phase by a Completed condition its phase did not write', () => {
    for (const phase of PHASES)
      expect(givenUp(restore(phase, 'RetriesExhausted')), `phase ${phase}`).toMatchObject({
        reason: 'RetriesExhausted',
      });
  });

  it('is active no more, unless given up mid-load: that load is its own next run’s (or its deletion’s) to settle', () => {
    for (const phase of PHASES.filter((p) => p !== 'Restoring'))
      expect(isActive(restore(phase, 'RetriesExhausted')), `phase ${phase}`).toBe(false);
    expect(isActive(restore('Restoring', 'RetriesExhausted'))).toBe(true);
  });

  it('is not one that runs: no condition yet, or the one its phase writes', () => {
    for (const phase of PHASES) {
      expect(givenUp(restore(phase)), `phase ${phase}`).toBeUndefined();
      expect(isActive(restore(phase)), `phase ${phase}`).toBe(true);
      expect(givenUp(restore(phase, phase ?? 'Pending')), `phase ${phase}`).toBeUndefined();
      expect(isActive(restore(phase, phase ?? 'Pending')), `phase ${phase}`).toBe(true);
    }
    // A phase's own reason in another phase is not its own: a Verifying reason left in Restoring.
    expect(givenUp(restore('Restoring', 'Verifying'))).toMatchObject({ reason: 'Verifying' });
  });

  it('is not a finished one, whatever its condition says', () => {
    expect(givenUp(restore('Failed', 'ChecksumMismatch'))).toBeUndefined();
    expect(isActive(restore('Failed', 'ChecksumMismatch'))).toBe(false);
  });
});
