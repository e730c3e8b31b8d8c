import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { askForPasswordRotation } from './password-drift.ts';

const rc = (reconciledReason?: string) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'cache', namespace: 'ns', uid: 'u1' },
    spec: {},
    status: reconciledReason
      ? { conditions: [{ type: 'Reconciled', status: 'False', reason: reconciledReason, message: '' }] }
      : {},
  }) as unknown as RedisCluster;

const context = () => {
  const sent: CloudEvent<unknown>[] = [];
  const ctx = {
    clock: () => new Date('2026-11-23T00:00:00Z'),
    publisher: { publish: async (e: CloudEvent<unknown>) => void sent.push(e) },
    log: { info: () => undefined },
  } as unknown as HandlerContext;
  return { ctx, sent };
};

describe('askForPasswordRotation', () => {
  it('asks reconcile when the Secret holds a password the instances do not have yet', async () => {
    const { ctx, sent } = context();
    const auth = { desired: 'fresh-secret-value', applied: 'old-secret-value' };
    expect(await askForPasswordRotation(ctx, rc(), auth, 'health')).toBe(true);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      type: 'dev.tideway.cluster.reconcile',
      kind: 'RedisCluster',
      namespace: 'ns',
      name: 'cache',
    });
    // The password itself never travels.
    expect(JSON.stringify(sent[0])).not.toMatch(/secret-value/);
  });

  it('stays quiet when nothing changed, or when reconcile is rolling it already', async () => {
    const { ctx, sent } = context();
    expect(await askForPasswordRotation(ctx, rc(), { desired: 'same', applied: 'same' }, 'health')).toBe(
      false,
    );
    expect(
      await askForPasswordRotation(ctx, rc('RotatingPassword'), { desired: 'new', applied: 'old' }, 'health'),
    ).toBe(false);
    expect(sent).toHaveLength(0);
  });
});
