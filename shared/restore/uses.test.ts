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
    // Given up on mid-load: the way back stays until its load is settled and it has ended.
    list.push(
      restore('given-up-loading', {
        source: { backup: { name: 'other' } },
        safety: 'nightly',
        phase: 'Restoring',
        givenUp: true,
      }),
    );
    expect(restoresUsing(list, nightly)).toEqual([
      'by-name',
      'pending',
      'latest',
      'rollback',
      'given-up-loading',
    ]);
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
      // Given up on before a load: its next run ends it without one; there may never be one.
      ...['Verifying', 'SafetyBackup'].map((phase) =>
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

  it('are those whose raw S3 key names its stored object: its bucket and key, whatever the endpoint is called', () => {
    const stored = {
      metadata: { name: 'nightly', uid: 'u-1' },
      status: {
        phase: 'Completed',
        location: 's3://bkp/team/cache/nightly.rdb.zst',
        store: {
          s3: {
            bucket: 'bkp',
            endpoint: 'http://s3.local:9000',
            prefix: 'team',
            credentialsSecret: { name: 'c' },
          },
        },
      },
    } as never;
    const raw = (name: string, s3: { bucket?: string; endpoint?: string; prefix?: string; key: string }) =>
      restore(name, {
        source: {
          s3: {
            store: {
              s3: {
                bucket: s3.bucket ?? 'bkp',
                endpoint: s3.endpoint ?? 'http://s3.local:9000/',
                ...(s3.prefix !== undefined ? { prefix: s3.prefix } : {}),
                credentialsSecret: { name: 'c' },
              },
            },
            key: s3.key,
          },
        },
        phase: 'Verifying',
      });
    const list = [
      raw('copied', { key: 'team/cache/nightly.rdb.zst' }),
      raw('under-prefix', { prefix: 'team', key: 'cache/nightly.rdb.zst' }),
      raw('other-key', { key: 'team/cache/other.rdb.zst' }),
      raw('other-bucket', { bucket: 'elsewhere', key: 'team/cache/nightly.rdb.zst' }),
      // Another name of the same server, maybe: endpoints are not compared.
      raw('other-endpoint', {
        endpoint: 'HTTP://s3.local.svc.cluster.local:9000',
        key: 'team/cache/nightly.rdb.zst',
      }),
      restore('resolved', {
        source: {
          s3: {
            store: {
              s3: { bucket: 'bkp', endpoint: 'http://s3.local:9000', credentialsSecret: { name: 'c' } },
            },
            key: 'x',
          },
        },
        resolved: { kind: 's3', key: 'team/cache/nightly.rdb.zst' },
        phase: 'Restoring',
      }),
    ];
    expect(restoresUsing(list, stored)).toEqual(['copied', 'under-prefix', 'other-endpoint', 'resolved']);
    // A Backup with no stored object (never uploaded) is read by no raw key.
    expect(restoresUsing(list, { metadata: { name: 'nightly', uid: 'u-1' } })).toEqual([]);
  });
});
