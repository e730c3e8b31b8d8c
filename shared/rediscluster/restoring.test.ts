import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import { markedRestore, RESTORING_HOLD_MS, restoringMessageFor, restoringNow } from './restoring.ts';

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

describe('markedRestore', () => {
  const marked = (status: string, message: string) =>
    ({
      status: { conditions: [{ type: 'Restoring', status, reason: 'Restoring', message }] },
    }) as RedisCluster;
  it('names the Restore a Restoring=True condition names, whatever its age, and its name only', () => {
    expect(markedRestore(marked('True', `${restoringMessageFor('nightly.v2-1')}loads Backup b`))).toBe(
      'nightly.v2-1',
    );
    expect(markedRestore(rc('True', '2020-01-01T00:00:00Z'))).toBe('r');
  });
  it('names none for an ended condition, one of another wording, or none at all', () => {
    expect(markedRestore(marked('False', `${restoringMessageFor('r1')}restored`))).toBeUndefined();
    expect(markedRestore(marked('True', 'a restore is under way'))).toBeUndefined();
    expect(markedRestore(marked('True', 'Restore '))).toBeUndefined();
    expect(markedRestore({ status: {} } as RedisCluster)).toBeUndefined();
  });
});
