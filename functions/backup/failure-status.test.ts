import { describe, expect, it } from 'vitest';
import { failureStatus } from './index.ts';

const report = {
  kind: 'Backup',
  reason: 'RetriesExhausted',
  message: 'the handler did not finish in 1 attempts',
};
const condition = { type: 'Completed', status: 'False', reason: 'RetriesExhausted', message: report.message };

describe('failureStatus: the runtime giving up on a Backup', () => {
  it.each(['Pending', 'Running', undefined])('ends one %s: Failed, with the reason', (phase) => {
    const status = { ...(phase ? { phase } : {}), attempts: 1, conditions: [condition] };
    expect(failureStatus(report, status)).toEqual({
      ...status,
      phase: 'Failed',
      error: { reason: 'RetriesExhausted', message: report.message },
    });
  });

  it.each(['Completed', 'Failed'])(
    'leaves one %s as it is: a later failure says nothing of its data',
    (phase) => {
      const status = { phase, conditions: [condition] };
      expect(failureStatus(report, status)).toBe(status);
    },
  );

  it("leaves another kind's status alone (the function also handles Restores' outcomes)", () => {
    const status = { phase: 'Restoring', conditions: [condition] };
    expect(failureStatus({ ...report, kind: 'Restore' }, status)).toBe(status);
  });
});
