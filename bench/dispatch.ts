import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudEvent } from 'cloudevents';
import type { Testbed } from '../infra/testbed/types.ts';
import { sleep, until } from '../infra/testbed/wait.ts';
import { connectBus } from '../shared/bus/connect.ts';
import { jetStreamPublisher } from '../shared/bus/publisher.ts';
import { ensureStream } from '../shared/bus/stream.ts';
import { filterSubject } from '../shared/events/subjects.ts';
import { deleteConsumers } from '../shared/runtime/durables.ts';
import { ms, now, percentile, pool, root, spawnFunction } from './support.ts';

export type DispatchOptions = {
  rate: number;
  seconds: number;
  objects: number;
  /** Function replicas, and how long each keeps a lock after a run (TIDEWAY_LOCK_KEEP_MS). */
  setups: { replicas: number; keepMs: number }[];
};

/** `name rv type t` lines of the probe, `rv t` lines of the bare consumer, by resourceversion. */
const times = (file: string, rvAt: number, tAt: number) => {
  const seen = new Map<string, number>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const parts = line.split(' ');
    const rv = parts[rvAt] ?? '';
    if (rv && !seen.has(rv)) seen.set(rv, Number(parts[tAt]));
  }
  return seen;
};

/**
 * The runtime's own part of the event path, without the API server: CloudEvents published into
 * JetStream as the watcher publishes them, at a steady rate over many objects, to the probe
 * function (1 or more replicas, each a process) — delivery, per-object lock, scheduling, handler
 * start — against the same messages read by a bare JetStream consumer in a process of its own.
 * On this machine the end-to-end bench (event-path.ts) is bound by the API server at 200
 * updates/s, which drowns milliseconds; this one measures what Tideway adds per event.
 */
export const benchDispatch = async (bed: Testbed, o: DispatchOptions) => {
  const bus = await connectBus(bed.natsUrl, 'bench-dispatch');
  await ensureStream(bus.jsm);
  const publisher = jetStreamPublisher(bus.js);
  const dir = await mkdtemp(join(tmpdir(), 'tideway-bench-dispatch-'));
  const namespaces: string[] = [];
  const lines: string[] = [];
  try {
    for (const [s, setup] of o.setups.entries()) {
      const ns = `bench-dispatch-${Date.now().toString(36)}-${s}`;
      namespaces.push(ns);
      const probeFile = join(dir, `probe-${s}.txt`);
      const bareFile = join(dir, `bare-${s}.txt`);
      writeFileSync(probeFile, '');
      writeFileSync(bareFile, '');
      const bare = spawn(process.execPath, [join(root, 'bench', 'fixtures', 'bare-consumer.ts')], {
        env: {
          ...process.env,
          NATS_URL: bed.natsUrl,
          OUT_FILE: bareFile,
          FILTER: filterSubject('dev.tideway.resource.*', 'RedisCluster', ns),
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const bareExited = once(bare, 'exit');
      const probes = Array.from({ length: setup.replicas }, (_, i) =>
        spawnFunction('probe', {
          NATS_URL: bed.natsUrl,
          KUBECONFIG: bed.kubeconfig,
          PROBE_FILE: probeFile,
          TIDEWAY_WATCH_NAMESPACE: ns,
          TIDEWAY_REPLICA: String(i),
          TIDEWAY_LOCK_KEEP_MS: String(setup.keepMs),
        }),
      );
      try {
        const names = Array.from({ length: o.objects }, (_, i) => `o-${i}`);
        const event = (name: string, rv: string) =>
          new CloudEvent({
            id: `${ns}-${rv}`,
            source: '/bench/dispatch',
            type: 'dev.tideway.resource.updated',
            kind: 'RedisCluster',
            namespace: ns,
            name,
            resourceversion: rv,
            data: {},
          });
        await until(
          'the bare consumer consumes',
          async () => (times(bareFile, 0, 1).has('consuming') ? true : undefined),
          30_000,
          100,
        );
        // Warm-up: every replica connected and every object seen once (its lock taken once).
        await until(
          'the probe handles',
          async () => {
            await publisher.publish(event('warm', `warm-${Date.now()}`));
            return times(probeFile, 1, 3).size > 0 ? true : undefined;
          },
          60_000,
          500,
        );
        // Replicas that started together settle their partitions within a pull's expiry (5 s);
        // then each object once, so its lock is where its events will go.
        await sleep(6000);
        await pool(names.length, 16, (i) => publisher.publish(event(names[i]!, `w-${i}`)));
        await sleep(1000);

        const sent = new Map<string, number>();
        const total = o.rate * o.seconds;
        const start = now();
        await pool(total, 64, async (i) => {
          const wait = start + (i * 1000) / o.rate - now();
          if (wait > 0) await sleep(wait);
          const rv = `r-${i}`;
          const t0 = now();
          await publisher.publish(event(names[i % names.length]!, rv));
          sent.set(rv, t0);
        });
        await until(
          'the probe caught up',
          async () => {
            const seen = times(probeFile, 1, 3);
            return [...sent.keys()].every((rv) => seen.has(rv)) ? true : undefined;
          },
          60_000,
          250,
        ).catch(() => undefined);
        await sleep(500);
        const probe = times(probeFile, 1, 3);
        const base = times(bareFile, 0, 1);
        // Objects whose measured events ran on more than one replica (each move is a hand-over).
        const replicasOf = new Map<string, Set<string>>();
        for (const line of readFileSync(probeFile, 'utf8').split('\n')) {
          const [name = '', rv = '', , , replica = ''] = line.split(' ');
          if (sent.has(rv)) replicasOf.set(name, (replicasOf.get(name) ?? new Set()).add(replica));
        }
        const moved = [...replicasOf.values()].filter((s) => s.size > 1).length;
        const both = [...sent.keys()].filter((rv) => probe.has(rv) && base.has(rv));
        const sorted = (f: (rv: string) => number) => both.map(f).sort((a, b) => a - b);
        const baseline = sorted((rv) => base.get(rv)! - sent.get(rv)!);
        const handler = sorted((rv) => probe.get(rv)! - sent.get(rv)!);
        const added = sorted((rv) => probe.get(rv)! - base.get(rv)!);
        lines.push(
          `dispatch @ ${o.rate}/s for ${o.seconds}s over ${o.objects} objects, ${setup.replicas} replica(s), ` +
            `locks kept ${setup.keepMs} ms: ${[...sent.keys()].filter((rv) => probe.has(rv)).length} handled of ${sent.size} sent, ${both.length} seen by both; ${moved} of ${replicasOf.size} objects ran on more than one replica`,
          `  bare consumer (baseline)      p50 ${ms(percentile(baseline, 50))}  p99 ${ms(percentile(baseline, 99))}`,
          `  tideway handler start         p50 ${ms(percentile(handler, 50))}  p99 ${ms(percentile(handler, 99))}` +
            `  ratio p50 ${(percentile(handler, 50) / percentile(baseline, 50)).toFixed(2)}x  p99 ${(percentile(handler, 99) / percentile(baseline, 99)).toFixed(2)}x`,
          `  added by tideway (per event)  p50 ${ms(percentile(added, 50))}  p99 ${ms(percentile(added, 99))}`,
        );
        process.stderr.write(`${lines.slice(-4).join('\n')}\n`);
      } finally {
        bare.kill('SIGTERM');
        await Promise.all([...probes.map((p) => p.stop()), bareExited]);
      }
    }
  } finally {
    for (const ns of namespaces) await deleteConsumers(bus.jsm, 'probe', ns);
    await bus.close();
    await rm(dir, { recursive: true, force: true });
  }
  return lines;
};
