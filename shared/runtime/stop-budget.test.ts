import { describe, expect, it } from 'vitest';
import { stopBudget } from './stop-budget.ts';

describe('stopBudget', () => {
  it('exits before the grace period ends, whatever the function timeout', () => {
    // Kubernetes' default grace, a backup's hour-long timeout: drain 27 s, out at 29 s.
    expect(stopBudget(30, 3600)).toEqual({ drainMs: 27_000, exitMs: 29_000 });
    // A short timeout drains no longer than the timeout.
    expect(stopBudget(30, 5)).toEqual({ drainMs: 5000, exitMs: 29_000 });
    // A grace too short to drain: cancel at once, still out before the SIGKILL.
    expect(stopBudget(2, 60)).toEqual({ drainMs: 0, exitMs: 1000 });
  });
});
