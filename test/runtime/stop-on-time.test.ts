import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { ensureStream } from '../../shared/bus/stream.ts';
import { deleteConsumers } from '../../shared/runtime/durables.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { spawnWorker, type Worker } from '../support/functions.ts';
import { probeEvent, readRuns } from './probe-support.ts';

/**
 * A function's process stops within its grace period (the pod's terminationGracePeriodSeconds),
 * even with a handler that ignores cancellation: a kubelet would SIGKILL it mid-work otherwise.
 */
describe('a worker told to stop', () => {
  const b = bed();
  let ns = '';
  let dir = '';
  let bus: Bus;
  let worker: Worker | undefined;

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'stop');
    dir = await mkdtemp(join(tmpdir(), 'tideway-probe-'));
    bus = await connectBus(b.info.natsUrl, 'stop-test');
    await ensureStream(bus.jsm);
  });

  afterAll(async () => {
    await worker?.kill();
    if (bus) await deleteConsumers(bus.jsm, 'probe', ns);
    await bus?.close();
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('exits within its grace period while a handler hangs', async () => {
    worker = spawnWorker('probe', {
      NATS_URL: b.info.natsUrl,
      KUBECONFIG: b.info.kubeconfig,
      PROBE_DIR: dir,
      TIDEWAY_WATCH_NAMESPACE: ns,
      TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS: '4',
      TIDEWAY_LOG_LEVEL: 'info',
    });
    const w = worker;
    await until(
      'the worker consumes',
      async () => (w.output().includes('"started"') ? true : undefined),
      30_000,
      100,
    ).catch(() => undefined);
    await probeEvent(jetStreamPublisher(bus.js), ns, 'stuck', { behaviour: 'hang' });
    await until(
      'the handler hangs',
      async () => (readRuns(dir).some((r) => r.behaviour === 'hang') ? true : undefined),
      30_000,
      50,
    );
    const stopAt = performance.now();
    await w.stop();
    // The hard stop comes a second before the SIGKILL would.
    expect(performance.now() - stopAt, w.output()).toBeLessThan(4000);
  });
});
