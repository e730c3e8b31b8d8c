import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Instance } from './probe.ts';
import { planRollout } from './rollout.ts';

const sts = (revision = 'new', observed = 2): V1StatefulSet => ({
  metadata: { generation: 2 },
  status: { replicas: 3, updateRevision: revision, observedGeneration: observed },
});
const pod = (ordinal: number, revision: string): V1Pod => ({
  metadata: { name: `c-${ordinal}`, labels: { 'controller-revision-hash': revision } },
});
const inst = (ordinal: number, master = 0): Instance => ({
  pod: `c-${ordinal}`,
  ordinal,
  ip: `10.0.0.${ordinal + 10}`,
  podReady: true,
  terminating: false,
  replication:
    ordinal === master
      ? { role: 'master', offset: 100, replid: 'a', replicas: [] }
      : {
          role: 'replica',
          offset: 100,
          masterHost: `10.0.0.${master + 10}`,
          masterPort: 6379,
          linkUp: true,
          syncInProgress: false,
          replid: 'a',
          replid2: '',
          linkDownSeconds: 0,
        },
});
const instances = [inst(0), inst(1), inst(2)];
const plan = (
  revs: string[],
  o: { inSync?: boolean; desired?: number; s?: V1StatefulSet; instances?: Instance[] } = {},
) =>
  planRollout({
    sts: o.s ?? sts(),
    pods: revs.map((r, i) => pod(i, r)),
    instances: (o.instances ?? instances).slice(0, revs.length),
    master: 'c-0',
    desired: o.desired ?? revs.length,
    inSync: o.inSync ?? true,
  });

describe('planRollout', () => {
  it('restarts replicas first, highest ordinal first, one at a time', () => {
    expect(plan(['old', 'old', 'old'])).toMatchObject({ kind: 'deletePod', pod: 'c-2' });
    expect(plan(['old', 'old', 'new'])).toMatchObject({ kind: 'deletePod', pod: 'c-1' });
  });

  it('waits for the cluster to be in sync before each restart', () => {
    expect(plan(['old', 'old', 'new'], { inSync: false })).toMatchObject({ kind: 'wait' });
  });

  it('replaces a replica stuck on an old template at once, without waiting for sync', () => {
    const stuck = [inst(0), { ...inst(1), podReady: false, replication: undefined }, inst(2)];
    expect(plan(['old', 'old', 'new'], { inSync: false, instances: stuck })).toMatchObject({
      kind: 'deletePod',
      pod: 'c-1',
    });
  });

  it('hands the master role to an updated replica, then the old master is the last', () => {
    const step = plan(['old', 'new', 'new']);
    expect(step).toMatchObject({ kind: 'switchover', why: expect.stringContaining('2/3') });
    expect(step.kind === 'switchover' && [step.from.pod, step.to.pod]).toEqual(['c-0', 'c-1']);
  });

  it('is done when every pod runs the new revision', () => {
    expect(plan(['new', 'new', 'new'])).toEqual({ kind: 'none' });
  });

  it('does not trust a StatefulSet whose controller has not caught up with the template', () => {
    expect(plan(['old', 'old', 'old'], { s: sts('old', 1) })).toMatchObject({ kind: 'wait' });
  });

  it('restarts a single instance in place: there is nobody to hand over to', () => {
    expect(plan(['old'], { desired: 1 })).toMatchObject({ kind: 'deletePod', pod: 'c-0' });
  });
});
