import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { ensureStream } from '../../shared/bus/stream.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { consumerBacklog, deleteConsumers } from '../../shared/runtime/durables.ts';
import type { Supervisor } from '../../shared/runtime/supervisor.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { probeEvent, readRuns, startProbe } from './probe-support.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;

/**
 * A delivery whose handler hangs, ignoring cancellation, makes its process exit (crash-only);
 * the attempt counts when it starts, so after the function's maximumRetryAttempts (2 for the
 * probe) the message is termed and reported instead of taking its process down forever.
 */
describe('a handler that hangs', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  let bus: Bus;
  let probe: Awaited<ReturnType<typeof startProbe>> | undefined;
  let sup: Supervisor | undefined;

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'poison');
    dir = await mkdtemp(join(tmpdir(), 'tideway-probe-'));
    bus = await connectBus(b.info.natsUrl, 'poison-test');
    await ensureStream(bus.jsm);
    await b.custom.createNamespacedCustomObject({
      ...RDC,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name: 'stuck' },
        spec: { replicas: 1 },
      },
    });
    probe = await startProbe({ natsUrl: b.info.natsUrl, kubeconfig: b.info.kubeconfig, namespace: ns, dir });
    sup = probe.sup;
  });

  afterAll(async () => {
    await sup?.stop();
    if (probe && bus) await deleteConsumers(bus.jsm, 'probe', ns);
    await bus?.close();
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('is termed and reported after maximumRetryAttempts, and the function keeps handling other objects', async () => {
    const publisher = jetStreamPublisher(bus.js);
    const handled = (prefix: string, n: number) => async () => {
      const names = new Set(readRuns(dir).map((r) => r.name));
      return Array.from({ length: n }, (_, i) => `${prefix}-${i}`).every((x) => names.has(x))
        ? true
        : undefined;
    };
    await probeEvent(publisher, ns, 'stuck', { behaviour: 'hang' });
    for (let i = 0; i < 10; i++) await probeEvent(publisher, ns, `before-${i}`);
    await until('objects published with the hanging one handled', handled('before', 10), 30_000, 200);

    const condition = await until(
      'the hanging object reported as failed',
      async () => {
        const o = (await b.custom.getNamespacedCustomObject({ ...RDC, namespace: ns, name: 'stuck' })) as {
          status?: { conditions?: Condition[] };
        };
        const c = findCondition(o.status?.conditions, 'Probed');
        return c?.status === 'False' ? c : undefined;
      },
      120_000,
      500,
    );
    expect(condition.reason).toBe('RetriesExhausted');
    expect(condition.message).toMatch(/did not finish in 2 attempts/);
    // The Event is recorded right after the condition is written: waited for, not raced.
    await until(
      'a RetriesExhausted Warning Event on the object',
      async () =>
        (await b.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })).items.some(
          (e) => e.regarding?.name === 'stuck' && e.reason === 'RetriesExhausted' && e.type === 'Warning',
        ) || undefined,
      10_000,
      100,
    );
    // It ran twice (two processes ended by the watchdog), and not a third time.
    const hung = readRuns(dir).filter((r) => r.name === 'stuck');
    expect(hung.map((r) => r.attempt)).toEqual([1, 2]);
    expect(probe?.restarts.length).toBe(2);

    // From now on nothing takes the function's processes down: new objects are handled by the
    // same processes, and the stream holds nothing more for it (the hanging event was termed).
    const pids = sup?.pids();
    for (let i = 0; i < 10; i++) await probeEvent(publisher, ns, `after-${i}`);
    await until('objects published afterwards handled', handled('after', 10), 30_000, 200);
    await until(
      'nothing pending for the function',
      async () => {
        const c = await consumerBacklog(bus.jsm, 'probe', ns);
        return c.missing === 0 && c.pending === 0 && c.ackPending === 0 ? true : undefined;
      },
      10_000,
      200,
    );
    expect(sup?.pids()).toEqual(pids);
    expect(readRuns(dir).filter((r) => r.name === 'stuck')).toHaveLength(2);
  });
});
