import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { ensureStream } from '../../shared/bus/stream.ts';
import { deleteConsumers } from '../../shared/runtime/durables.ts';
import type { Supervisor } from '../../shared/runtime/supervisor.ts';
import { bed, sleep, until } from '../support/bed.ts';
import { probeEvent, readRuns, startProbe } from './probe-support.ts';

/**
 * A handler module's `lockKey`: events about different objects (Backups, say) that lock one
 * RedisCluster never run at the same time, in one process or across replicas, and each object's
 * last event is still handled (coalescing stays per object under a shared lock).
 */
describe('a handler that locks another object than its event', () => {
  const b = bed();
  const ns = `lockkey-${Math.random().toString(36).slice(2, 7)}`;
  let dir = '';
  let bus: Bus;
  let probe: Awaited<ReturnType<typeof startProbe>> | undefined;
  let sup: Supervisor | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-probe-'));
    bus = await connectBus(b.info.natsUrl, 'lock-key-test');
    await ensureStream(bus.jsm);
    probe = await startProbe({ natsUrl: b.info.natsUrl, kubeconfig: b.info.kubeconfig, namespace: ns, dir });
    sup = probe.sup;
  });

  afterAll(async () => {
    await sup?.stop();
    if (probe && bus) await deleteConsumers(bus.jsm, 'probe', ns);
    await bus?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serializes runs on different objects under one lock key, across replicas', async () => {
    const publisher = jetStreamPublisher(bus.js);
    // Both replicas pulling before the burst (the server hands messages to their pulls in turn).
    await until(
      'both replicas handling events',
      async () => {
        await probeEvent(publisher, ns, `warm-up-${Date.now()}`);
        return new Set(readRuns(dir).map((r) => r.pid)).size === 2 ? true : undefined;
      },
      30_000,
      200,
    );
    const objects = ['nightly', 'hourly', 'manual'];
    const generations = 8;
    // A burst's runs coalesce per object and may all land on one replica; then that burst proved
    // nothing across processes: send another (bounded) until both replicas ran some of them.
    for (let burst = 0; burst < 4; burst++) {
      for (let g = 1; g <= generations; g++) {
        await Promise.all(
          objects.map((name) =>
            probeEvent(publisher, ns, name, {
              cluster: 'cache',
              sleep: '100',
              generation: String(burst * generations + g),
            }),
          ),
        );
        await sleep(50); // a burst over time, not all at once
      }
      const lastGeneration = String((burst + 1) * generations);
      await until(
        "every object's last event handled",
        async () => {
          const last = new Set(
            readRuns(dir)
              .filter((r) => r.generation === lastGeneration)
              .map((r) => r.name),
          );
          return objects.every((o) => last.has(o)) ? true : undefined;
        },
        60_000,
        200,
      );
      const pids = new Set(
        readRuns(dir)
          .filter((r) => objects.includes(r.name))
          .map((r) => r.pid),
      );
      if (pids.size === 2) break;
    }
    const runs = readRuns(dir).filter((r) => objects.includes(r.name));
    expect(runs.filter((r) => r.overlap)).toEqual([]);
    for (const a of runs)
      for (const c of runs)
        if (a !== c)
          expect(a.started < (c.ended ?? 0) && c.started < (a.ended ?? 0), `${a.name} ∥ ${c.name}`).toBe(
            false,
          );
    // Both replicas took part: the lock held across processes, not only the in-process order.
    expect(new Set(runs.map((r) => r.pid)).size).toBe(2);
  });
});
