import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { installTideway } from '../infra/install.ts';
import { freePort } from '../infra/testbed/process/ports.ts';
import type { Testbed } from '../infra/testbed/types.ts';
import { sleep, until } from '../infra/testbed/wait.ts';
import { TIDEWAY_KINDS } from '../shared/kube/resources.ts';
import { loadServerless, nodeArgsFor } from '../shared/runtime/config.ts';
import { patcher } from './patcher.ts';
import {
  BENCH_SERVERLESS,
  counterTotal,
  metricsUntil,
  ms,
  now,
  percentile,
  pool,
  root,
  SERVERLESS,
  spawnFunction,
} from './support.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;

export type EventPathOptions = {
  /**
   * Each run: probe replica processes (one function's replicas share its partitioned consumers),
   * and the update rates offered to them, events/s, each for `seconds`.
   */
  runs: { replicas: number; rates: number[] }[];
  seconds: number;
  /** Objects the updates go round-robin over. */
  objects: number;
  /** Objects for the cold relist. */
  relist: number;
};

/**
 * The event path, object update → handler start, through the real watcher, JetStream and a
 * function process, against a watch callback on the same updates in a process of its own (the
 * informer a classic operator would run); then a cold relist: the watcher starting on N objects it never saw.
 */
export const benchEventPath = async (bed: Testbed, o: EventPathOptions) => {
  await installTideway({ kubectl: bed.kubectl, kubeconfig: bed.kubeconfig, fieldManager: 'tideway-bench' });
  const kc = new KubeConfig();
  kc.loadFromFile(bed.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const dir = await mkdtemp(join(tmpdir(), 'tideway-bench-'));
  const probeFile = join(dir, 'probe.txt');
  writeFileSync(probeFile, '');
  const baseEnv = { NATS_URL: bed.natsUrl, KUBECONFIG: bed.kubeconfig, PROBE_FILE: probeFile };
  const namespaces: string[] = [];
  /** What must not outlive a failed run: processes and sockets of this process's own. */
  const cleanups: (() => void)[] = [];
  const createNs = async (name: string) => {
    await core.createNamespace({ body: { metadata: { name } } });
    namespaces.push(name);
    return name;
  };
  const create = (namespace: string, name: string) =>
    custom.createNamespacedCustomObject({
      ...RDC,
      namespace,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name },
        spec: { replicas: 1 },
      },
    });
  const probed = () =>
    readFileSync(probeFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [name = '', rv = '', type = '', t = '0', by = '', made = 'NaN'] = l.split(' ');
        return { name, rv, type, t: Number(t), by, made: Number(made) };
      });

  const lines: string[] = [];
  try {
    for (const run of o.runs) {
      // --- event path ---------------------------------------------------------------------------
      const ns = await createNs(`bench-path-${run.replicas}-${Date.now().toString(36)}`);
      const env = { ...baseEnv, TIDEWAY_WATCH_NAMESPACE: ns, TIDEWAY_HEALTH_INTERVAL: '600s' };
      const watcher = spawnFunction('watcher', { ...env, TIDEWAY_WATCHER_ID: `bench-path-${run.replicas}` });
      const probes = Array.from({ length: run.replicas }, () => spawnFunction('probe', env));
      const names = Array.from({ length: o.objects }, (_, i) => `o${run.replicas}-${i}`);
      const objectsPath = `/apis/${RDC.group}/${RDC.version}/namespaces/${ns}/${RDC.plural}`;
      await pool(names.length, 16, (i) => create(ns, names[i]!));
      await until(
        'the probe saw every object',
        async () => {
          const seen = new Set(probed().map((p) => p.name));
          return names.every((n) => seen.has(n)) ? true : undefined;
        },
        120_000,
        200,
      );
      // Replicas take their shares of the partitions from their next pulls (5 s at most).
      if (run.replicas > 1) await sleep(6000);

      // The baseline: a watch in a process of its own, as an informer's event handler sees it.
      const informerFile = join(dir, 'informer.txt');
      writeFileSync(informerFile, '');
      const informerProcess = spawn(process.execPath, [join(root, 'bench', 'fixtures', 'informer.ts')], {
        env: {
          ...process.env,
          KUBECONFIG: bed.kubeconfig,
          OUT_FILE: informerFile,
          WATCH_PATH: objectsPath,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      const informerExited = once(informerProcess, 'exit');
      cleanups.push(() => informerProcess.kill('SIGTERM'));
      const informed = () => {
        const seen = new Map<string, number>();
        for (const l of readFileSync(informerFile, 'utf8').split('\n')) {
          const [rv = '', t = ''] = l.split(' ');
          if (rv && !seen.has(rv)) seen.set(rv, Number(t));
        }
        return seen;
      };
      await until(
        'the informer watches',
        async () => (informed().has('watching') ? true : undefined),
        30_000,
        100,
      );
      await sleep(500);

      const load = patcher(bed.kubeconfig);
      cleanups.push(() => load.close());
      // With replicas, a first pass over the objects comes before the measured rates: the objects'
      // added events ran while the replicas were still joining, so each object's first update
      // may land on another replica than its added event did and wait for the lock to be handed
      // over. Reported on its own; the rates after it measure the steady state.
      const windows = [
        ...(run.replicas > 1 ? [{ rate: 50, total: names.length, warmUp: true }] : []),
        ...run.rates.map((rate) => ({ rate, total: rate * o.seconds, warmUp: false })),
      ];
      for (const { rate, total, warmUp } of windows) {
        const sent = new Map<string, number>();
        // Which process ran each object's latest event so far: a run elsewhere took the lock over.
        const lastBy = new Map<string, string>();
        for (const p of probed().sort((a, b) => a.t - b.t)) lastBy.set(p.name, p.by);
        const start = now();
        let failed = 0;
        await pool(total, 128, async (i) => {
          const due = start + (i * 1000) / rate;
          const wait = due - now();
          if (wait > 0) await sleep(wait);
          const t0 = now();
          try {
            const rv = await load.patch(`${objectsPath}/${names[i % names.length]!}`, {
              metadata: { annotations: { bench: `${rate}-${i}` } },
            });
            sent.set(rv, t0);
          } catch {
            failed++;
          }
        });
        const sendSeconds = (now() - start) / 1000;
        // Wait until the last update of every object reached the probe (earlier ones may coalesce).
        await until(
          'the probe caught up',
          async () => {
            const seen = new Set(probed().map((p) => p.rv));
            let missing = 0;
            for (const rv of sent.keys()) if (!seen.has(rv)) missing++;
            return missing <= total - Math.min(total, names.length) ? true : undefined;
          },
          120_000,
          250,
        ).catch(() => undefined);
        await sleep(1000);
        const informer = informed();
        const handled = probed().filter((p) => sent.has(p.rv));
        // Compared on the updates both saw: the probe misses those coalesced away.
        const both = handled.filter((p) => informer.has(p.rv));
        const tideway = both.map((p) => p.t - sent.get(p.rv)!).sort((a, b) => a - b);
        const base = both.map((p) => informer.get(p.rv)! - sent.get(p.rv)!).sort((a, b) => a - b);
        const added = both.map((p) => p.t - informer.get(p.rv)!).sort((a, b) => a - b);
        // Where the added time goes, split at the moment the watcher made the event (ms clock).
        const toWatcher = both.map((p) => p.made - informer.get(p.rv)!).sort((a, b) => a - b);
        const toHandler = both.map((p) => p.t - p.made).sort((a, b) => a - b);
        // Runs on another process than the object's run before: the lock was handed over.
        const moved: number[] = [];
        for (const p of [...both].sort((a, b) => a.t - b.t)) {
          if (lastBy.has(p.name) && lastBy.get(p.name) !== p.by) moved.push(p.t - informer.get(p.rv)!);
          lastBy.set(p.name, p.by);
        }
        moved.sort((a, b) => a - b);
        const span = handled.length > 1 ? (Math.max(...handled.map((p) => p.t)) - start) / 1000 : Number.NaN;
        lines.push(
          `event path, ${run.replicas} probe replica${run.replicas > 1 ? 's' : ''}, ${warmUp ? `first update of each object after the replicas joined, @ ${rate}/s` : `@ ${rate}/s offered for ${o.seconds}s`}: ${sent.size} updates in ${sendSeconds.toFixed(1)}s ` +
            `(${(sent.size / sendSeconds).toFixed(0)}/s achieved, ${failed} failed); ` +
            `${handled.length} handled (${((handled.length / sent.size) * 100).toFixed(1)}%, the rest coalesced), ` +
            `${(handled.length / span).toFixed(0)} handler starts/s; ${both.length} seen by both the informer and the probe`,
          `  informer callback (baseline)  p50 ${ms(percentile(base, 50))}  p99 ${ms(percentile(base, 99))}`,
          `  tideway handler start         p50 ${ms(percentile(tideway, 50))}  p99 ${ms(percentile(tideway, 99))}` +
            `  ratio p50 ${(percentile(tideway, 50) / percentile(base, 50)).toFixed(2)}x  p99 ${(percentile(tideway, 99) / percentile(base, 99)).toFixed(2)}x`,
          `  added by tideway (per event)  p50 ${ms(percentile(added, 50))}  p99 ${ms(percentile(added, 99))}`,
          `    informer → watcher's event  p50 ${ms(percentile(toWatcher, 50))}  p99 ${ms(percentile(toWatcher, 99))}` +
            `  (watch delivery and decoding in the watcher; ms clock)`,
          `    watcher's event → handler   p50 ${ms(percentile(toHandler, 50))}  p99 ${ms(percentile(toHandler, 99))}` +
            `  (publish, JetStream, pull, dispatch)`,
          ...(run.replicas > 1
            ? [
                `    lock handed over (another replica ran the object's event before): ${moved.length} events` +
                  (moved.length
                    ? `, added p50 ${ms(percentile(moved, 50))}  max ${ms(moved.at(-1) ?? Number.NaN)}`
                    : ''),
              ]
            : []),
        );
        process.stderr.write(`${lines.slice(run.replicas > 1 ? -7 : -6).join('\n')}\n`);
      }
      load.close();
      informerProcess.kill('SIGTERM');
      await Promise.all([watcher.stop(), ...probes.map((p) => p.stop()), informerExited]);
    }

    // --- cold relist ----------------------------------------------------------------------------
    const ns2 = await createNs(`bench-relist-${Date.now().toString(36)}`);
    const t0 = now();
    await pool(o.relist, 32, (i) => create(ns2, `r-${i}`));
    process.stderr.write(`[bench] created ${o.relist} objects in ${((now() - t0) / 1000).toFixed(1)}s\n`);
    // The baseline: a paged list of the same objects in this process.
    const l0 = now();
    let listed = 0;
    let cont: string | undefined;
    do {
      const page = (await custom.listNamespacedCustomObject({
        ...RDC,
        namespace: ns2,
        limit: 500,
        ...(cont ? { _continue: cont } : {}),
      })) as { items: unknown[]; metadata: { continue?: string } };
      listed += page.items.length;
      cont = page.metadata.continue || undefined;
    } while (cont);
    const listMs = now() - l0;
    // The product's watcher settings (memorySize), as the supervisor applies them.
    const watcherArgs = nodeArgsFor((await loadServerless(SERVERLESS)).functions.watcher ?? {});
    // The floor: the same watcher process idle, on an empty namespace.
    const idlePort = await freePort();
    const idle = spawnFunction(
      'watcher',
      {
        ...baseEnv,
        TIDEWAY_WATCH_NAMESPACE: await createNs(`bench-idle-${Date.now().toString(36)}`),
        TIDEWAY_HEALTH_INTERVAL: '600s',
        TIDEWAY_WATCHER_ID: 'bench-idle',
        TIDEWAY_OPS_PORT: String(idlePort),
      },
      BENCH_SERVERLESS,
      watcherArgs,
    );
    await metricsUntil(idlePort, 'the idle watcher to serve /metrics', (page) => page !== '');
    await sleep(3000);
    const idleRss = idle.peakRssMiB();
    await idle.stop();
    const port = await freePort();
    const w0 = now();
    const cold = spawnFunction(
      'watcher',
      {
        ...baseEnv,
        TIDEWAY_WATCH_NAMESPACE: ns2,
        TIDEWAY_HEALTH_INTERVAL: '600s',
        TIDEWAY_WATCHER_ID: 'bench-relist',
        TIDEWAY_OPS_PORT: String(port),
      },
      BENCH_SERVERLESS,
      watcherArgs,
    );
    let published = 0;
    // A timeout is a result too: the line below says how many were published.
    await metricsUntil(
      port,
      'every object published',
      (page) => {
        published = counterTotal(page, 'tideway_watcher_published_total');
        return published >= o.relist;
      },
      300_000,
    ).catch(() => undefined);
    const relistMs = now() - w0;
    const rss = cold.peakRssMiB();
    await cold.stop();
    lines.push(
      `cold relist of ${listed} objects: all published and acked ${(relistMs / 1000).toFixed(1)}s after the watcher ` +
        `process started (${published} published), peak RSS ${rss.toFixed(0)} MiB (the same watcher idle: ${idleRss.toFixed(0)} MiB); ` +
        `baseline paged list in-process ${(listMs / 1000).toFixed(2)}s; ratio ${(relistMs / listMs).toFixed(1)}x`,
    );
    process.stderr.write(`${lines.at(-1)}\n`);
  } finally {
    for (const cleanup of cleanups) cleanup();
    if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
    // What it created must not weigh on the benchmarks after it.
    for (const name of namespaces) await core.deleteNamespace({ name }).catch(() => undefined);
  }
  return lines;
};
