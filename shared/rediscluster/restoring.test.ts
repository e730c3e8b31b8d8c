import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import { RESTORING_HOLD_MS, restoringNow } from './restoring.ts';

const rc = (status: string, at: string) =>
  ({
    status: {
      conditions: [
        {
          type: 'Restoring',
          status,
          reason: 'Restoring',
          message: 'Restore r loads b',
          lastTransitionTime: at,
        },
      ],
    },
  }) as unknown as RedisCluster;

describe('restoringNow', () => {
  const now = new Date('2026-11-23T12:00:00Z');
  it('holds back while a restore says it runs, for a bounded time', () => {
    expect(restoringNow(rc('True', '2026-11-23T11:59:00Z'), now)).toBe('Restore r loads b');
    expect(
      restoringNow(rc('True', new Date(now.getTime() - RESTORING_HOLD_MS - 1000).toISOString()), now),
    ).toBeUndefined();
    expect(restoringNow(rc('False', '2026-11-23T11:59:00Z'), now)).toBeUndefined();
  });
});
