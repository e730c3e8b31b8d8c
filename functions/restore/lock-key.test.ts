import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { lockKey } from './lock-key.ts';

const event = (ext: Record<string, string>) =>
  new CloudEvent({ specversion: '1.0', id: 'x', source: '/s', type: 'dev.tideway.resource.updated', ...ext });

describe('restore lockKey', () => {
  it('locks the RedisCluster the watcher names: no reconcile, health or backup of it runs meanwhile', () => {
    expect(lockKey(event({ kind: 'Restore', namespace: 'prod', name: 'r1', cluster: 'cache.a' }))).toBe(
      objectKeyOf({ kind: 'RedisCluster', namespace: 'prod', name: 'cache.a' }),
    );
  });

  it('locks the Restore itself when the event names no cluster', () => {
    expect(lockKey(event({ kind: 'Restore', namespace: 'prod', name: 'r1' }))).toBe(
      objectKeyOf({ kind: 'Restore', namespace: 'prod', name: 'r1' }),
    );
  });
});
