import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { clusterLockKey } from '../../shared/events/cluster-lock-key.ts';
import { EventType } from '../../shared/events/types.ts';
import { lookAtMarkedRestore, RESTORE_LOOK_MS } from './restore-look.ts';

const cluster = (conditions: object[]) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'main', namespace: 'prod', uid: 'u-rc' },
    spec: {},
    status: { master: 'main-0', conditions },
  }) as unknown as RedisCluster;
const mark = (status: string, name = 'r1') => ({
  type: 'Restoring',
  status,
  reason: 'Restoring',
  message: `Restore ${name} loads Backup b1 into main-0`,
  lastTransitionTime: '2026-11-28T07:00:00Z',
});

const health = () => {
  const published: CloudEvent<unknown>[] = [];
  let ms = Date.parse('2026-11-28T08:00:00Z');
  const ctx = {
    clock: () => new Date(ms),
    publisher: {
      publish: async (e: CloudEvent<unknown>) => ({ duplicate: false, seq: published.push(e) }),
    },
  };
  const advance = (by: number) => {
    ms += by;
  };
  return { ctx, published, advance };
};

describe('lookAtMarkedRestore', () => {
  it('runs the Restore the mark names, locking its cluster as the Restore’s own events do', async () => {
    const h = health();
    expect(await lookAtMarkedRestore(h.ctx, cluster([mark('True')]), '/health')).toBe('r1');
    expect(h.published).toHaveLength(1);
    const e = h.published[0]!;
    expect(e).toMatchObject({
      type: EventType.restoreTick,
      kind: 'Restore',
      namespace: 'prod',
      name: 'r1',
      cluster: 'main',
      clusterkind: 'RedisCluster',
    });
    // No uid: the look is for whichever Restore holds the name (the handler re-reads it).
    expect(e).not.toHaveProperty('uid');
    expect(clusterLockKey(e)).toBe('RedisCluster.prod.main');
  });

  it('one look a slot: the same id within RESTORE_LOOK_MS (the bus drops it), a new one after', async () => {
    const h = health();
    const rc = cluster([mark('True')]);
    await lookAtMarkedRestore(h.ctx, rc, '/health');
    h.advance(2000);
    await lookAtMarkedRestore(h.ctx, rc, '/health');
    h.advance(RESTORE_LOOK_MS);
    await lookAtMarkedRestore(h.ctx, rc, '/health');
    const [a, b, c] = h.published.map((e) => e.id);
    expect(a).toBe(b);
    expect(c).not.toBe(a);
    // Another Restore marked in the same slot is looked at on its own.
    await lookAtMarkedRestore(h.ctx, cluster([mark('True', 'r2')]), '/health');
    expect(h.published[3]!.id).not.toBe(c);
  });

  it('publishes nothing for a cluster whose mark ended, or that has none', async () => {
    const h = health();
    expect(await lookAtMarkedRestore(h.ctx, cluster([mark('False')]), '/health')).toBeUndefined();
    expect(await lookAtMarkedRestore(h.ctx, cluster([]), '/health')).toBeUndefined();
    expect(h.published).toHaveLength(0);
  });
});
