import { describe, expect, it } from 'vitest';
import type { RedisCluster } from '../api/generated.ts';
import { observe } from './observed.ts';
import type { Instance } from './probe.ts';

const ip = (o: number) => `10.0.0.${o + 10}`;
const master = (o: number): Instance => ({
  pod: `r-${o}`,
  ordinal: o,
  ip: ip(o),
  podReady: true,
  terminating: false,
  replication: { role: 'master', offset: 100, replid: 'a', replicas: [] },
});
const replica = (o: number, of: number): Instance => ({
  pod: `r-${o}`,
  ordinal: o,
  ip: ip(o),
  podReady: true,
  terminating: false,
  replication: {
    role: 'replica',
    offset: 100,
    masterHost: ip(of),
    masterPort: 6379,
    linkUp: true,
    syncInProgress: false,
    replid: 'a',
    replid2: '',
    linkDownSeconds: 0,
  },
});
const down = (o: number): Instance => ({
  pod: `r-${o}`,
  ordinal: o,
  ip: ip(o),
  podReady: false,
  terminating: false,
});
const cluster = (replicas: number) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'RedisCluster',
    metadata: { name: 'r', namespace: 'ns', generation: 2 },
    spec: { replicas },
    status: { master: 'r-2', phase: 'Ready' },
  }) as unknown as RedisCluster;
const ready = (o: ReturnType<typeof observe>) => o.conditions.find((c) => c.type === 'Ready');

describe('observe: Ready for the spec’s size', () => {
  it('is not Ready while a scale-down’s master is above the spec’s instances, however many serve', () => {
    // Scaling 3 → 2; r-2 is still master, r-0 is down, r-1 follows r-2.
    const o = observe(cluster(2), [down(0), replica(1, 2), master(2)], 'r-2', []);
    expect(o.phase).toBe('Degraded');
    expect(o.readyReplicas).toBe(1);
    expect(ready(o)).toMatchObject({ status: 'False', reason: 'InstancesNotReady' });
    expect(ready(o)?.message).toBe(
      "1/2 instances ready; master r-2 is above the spec's 2 instances and hands its role over first",
    );
    // Even with every instance of the spec serving, the master must come within it first.
    expect(observe(cluster(2), [replica(0, 2), replica(1, 2), master(2)], 'r-2', []).phase).toBe('Degraded');
  });

  it('is Ready once the master is within the spec and all of the spec’s instances serve', () => {
    const o = observe(cluster(2), [master(0), replica(1, 0), replica(2, 0)], 'r-0', []);
    expect(o.phase).toBe('Ready');
    expect(o.ready).toBe('2/2');
    expect(ready(o)).toMatchObject({ status: 'True', reason: 'AllInstancesReady' });
  });
});
