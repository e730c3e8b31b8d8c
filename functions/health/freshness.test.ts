import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { backupFreshness } from './freshness.ts';

const rc = (maxBackupAge?: string) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'cache', namespace: 'ns', creationTimestamp: '2026-11-01T00:00:00Z' },
    spec: maxBackupAge ? { backup: { maxBackupAge } } : {},
  }) as unknown as RedisCluster;

/** A context whose Backups cannot be listed (a role without it, an API server that refuses). */
const refusing = () => {
  const warnings: string[] = [];
  const ctx = {
    kube: {
      makeApiClient: () => ({
        listNamespacedCustomObject: async () => {
          throw new Error('backups.tideway.dev is forbidden');
        },
      }),
    },
    log: { warn: (msg: string) => void warnings.push(msg) },
    metrics: { set: () => undefined },
  } as unknown as HandlerContext;
  return { ctx, warnings };
};

describe('backupFreshness when Backups cannot be listed', () => {
  it('says Unknown with the reason, and does not throw (health goes on)', async () => {
    const { ctx, warnings } = refusing();
    const f = await backupFreshness(ctx, rc('26h'), new Date('2026-11-23T00:00:00Z'));
    expect(f.condition).toMatchObject({
      type: 'BackupStale',
      status: 'Unknown',
      reason: 'BackupsUnreadable',
    });
    expect(f.condition?.message).toContain('forbidden');
    expect(warnings).toEqual(['backups not readable']);
  });

  it('sets no condition without a target', async () => {
    const f = await backupFreshness(refusing().ctx, rc(), new Date('2026-11-23T00:00:00Z'));
    expect(f.condition).toBeUndefined();
  });
});
