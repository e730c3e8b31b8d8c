import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { lockKey } from './lock-key.ts';

const event = (ext: Record<string, string>) =>
  new CloudEvent({ specversion: '1.0', id: 'x', source: '/s', type: 'dev.tideway.resource.updated', ...ext });

describe('backup lockKey', () => {
  it('locks the RedisCluster the watcher names, so a backup never runs beside its reconcile or health', () => {
    expect(lockKey(event({ kind: 'Backup', namespace: 'prod', name: 'nightly', cluster: 'cache.a' }))).toBe(
      objectKeyOf({ kind: 'RedisCluster', namespace: 'prod', name: 'cache.a' }),
    );
  });

  it('locks the Backup itself when the event names no cluster', () => {
    expect(lockKey(event({ kind: 'Backup', namespace: 'prod', name: 'nightly' }))).toBe(
      objectKeyOf({ kind: 'Backup', namespace: 'prod', name: 'nightly' }),
    );
  });
});
