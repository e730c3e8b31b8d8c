import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { coalesceKeyOf } from './consumer.ts';

const event = (type: string, ext: Record<string, string>) =>
  new CloudEvent({ specversion: '1.0', id: 'e', source: '/t', type, ...ext });
const own = 'restores/prod/r1';

describe('what a waiting run may be replaced by', () => {
  it('is a resource event of the same object and incarnation: created, updated, deleted alike', () => {
    const keys = ['created', 'updated', 'deleted'].map((t) =>
      coalesceKeyOf(event(`dev.tideway.resource.${t}`, { uid: 'u-a' }), own),
    );
    expect(new Set(keys).size).toBe(1);
  });

  it('never an event of an earlier object of the same name: a retried deleted event and the new one’s created stay apart', () => {
    expect(coalesceKeyOf(event('dev.tideway.resource.deleted', { uid: 'u-a' }), own)).not.toBe(
      coalesceKeyOf(event('dev.tideway.resource.created', { uid: 'u-b' }), own),
    );
  });

  it('keeps events about an object without a uid of their own (a pod’s, about its cluster) together, and ticks apart', () => {
    const pod = (name: string) =>
      coalesceKeyOf(event('dev.tideway.resource.updated', { cause: `Pod/prod/${name}` }), own);
    expect(pod('cache-0')).toBe(pod('cache-1'));
    expect(coalesceKeyOf(event('dev.tideway.health.tick', {}), own)).not.toBe(pod('cache-0'));
  });
});
