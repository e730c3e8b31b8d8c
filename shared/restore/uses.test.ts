import { describe, expect, it } from 'vitest';
import type { Restore } from '../api/generated.ts';
import { restoresUsing, STATE_ANNOTATION } from './uses.ts';

const restore = (
  name: string,
  o: {
    source?: object;
    phase?: string;
    safety?: string;
    resolved?: object | string;
    /** The runtime gave up on it: its failure report replaced the phase's condition. */
    givenUp?: boolean;
  },
) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'Restore',
    metadata: {
      name,
      ...(o.resolved !== undefined
        ? {
            annotations: {
              [STATE_ANNOTATION]:
                typeof o.resolved === 'string' ? o.resolved : JSON.stringify({ source: o.resolved }),
            },
          }
        : {}),
    },
    spec: { cluster: { name: 'cache' }, source: o.source ?? { latest: true } },
    ...(o.phase || o.safety
      ? {
          status: {
            phase: o.phase,
            safetyBackup: o.safety,
            ...(o.givenUp
              ? {
                  conditions: [
                    { type: 'Completed', status: 'False', reason: 'RetriesExhausted', message: 'gave up' },
                  ],
                }
              : {}),
          },
        }
      : {}),
  }) as unknown as Restore;
const nightly = { metadata: { name: 'nightly', uid: 'u-1' } };

describe('the Restores that still need a Backup', () => {
  it('are the unfinished ones that load it (by name, or resolved from latest) or may roll back to it', () => {
    const list = [
      restore('by-name', { source: { backup: { name: 'nightly' } }, phase: 'Restoring' }),
      restore('pending', { source: { backup: { name: 'nightly' } } }),
      restore('latest', { resolved: { kind: 'backup', name: 'nightly', uid: 'u-1' }, phase: 'Verifying' }),
      restore('rollback', { source: { backup: { name: 'other' } }, safety: 'nightly', phase: 'Restoring' }),
    ];
    expect(restoresUsing(list, nightly)).toEqual(['by-name', 'pending', 'latest', 'rollback']);
  });

  it('are not finished ones, nor ones given up on, nor those of another Backup or another incarnation of its name', () => {
    const list = [
      ...['Completed', 'Failed', 'RolledBack'].map((phase) =>
        restore(phase, { source: { backup: { name: 'nightly' } }, safety: 'nightly', phase }),
      ),
      restore('other', { source: { backup: { name: 'other' } }, phase: 'Restoring' }),
      restore('s3', { source: { s3: {} }, resolved: { kind: 's3', key: 'a/b.rdb' }, phase: 'Restoring' }),
      restore('old-uid', { resolved: { kind: 'backup', name: 'nightly', uid: 'u-0' }, phase: 'Restoring' }),
      restore('unreadable', { resolved: '{not json', phase: 'Restoring' }),
      // Given up on: its next run ends it without a load; there may never be one.
      ...['Verifying', 'SafetyBackup', 'Restoring'].map((phase) =>
        restore(`given-up-${phase}`, {
          source: { backup: { name: 'nightly' } },
          safety: 'nightly',
          phase,
          givenUp: true,
        }),
      ),
    ];
    expect(restoresUsing(list, nightly)).toEqual([]);
  });
});
