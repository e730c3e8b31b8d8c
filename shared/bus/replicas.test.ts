import { describe, expect, it } from 'vitest';
import { busReplicas } from './replicas.ts';

describe('busReplicas', () => {
  it('is 1 unless set, and takes what JetStream can keep', () => {
    expect(busReplicas({})).toBe(1);
    expect(busReplicas({ TIDEWAY_NATS_REPLICAS: '' })).toBe(1);
    expect(busReplicas({ TIDEWAY_NATS_REPLICAS: '3' })).toBe(3);
  });

  it('refuses a count JetStream would not take, naming the setting', () => {
    expect(() => busReplicas({ TIDEWAY_NATS_REPLICAS: '2' })).toThrow(
      /TIDEWAY_NATS_REPLICAS must be 1, 3 or 5/,
    );
    expect(() => busReplicas({ TIDEWAY_NATS_REPLICAS: 'three' })).toThrow();
  });
});
