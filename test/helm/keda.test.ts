import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { lagRoutes } from '../../functions/watcher/lag.ts';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { installKedaCrds, type KedaOperator, startKedaOperator } from '../../infra/helm/local/keda.ts';
import { ensureGoBinaries } from '../../infra/testbed/build/ensure.ts';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { ensureStream } from '../../shared/bus/stream.ts';
import { PARTITIONS, STREAM, subjectFor } from '../../shared/events/subjects.ts';
import { EventType } from '../../shared/events/types.ts';
import { loadServerless } from '../../shared/runtime/config.ts';
import { ensureConsumers } from '../../shared/runtime/consumer.ts';
import { deleteConsumers, partitionConsumers } from '../../shared/runtime/durables.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { named, render } from './helm.ts';

const log = (m: string) => process.stderr.write(`${m}\n`);
const FN = 'reconcile';

/**
 * Issue 14 item 6, KEDA's side alone: the chart's ScaledObject for an event function, given to the
 * real KEDA operator (built at its pin), reading the watcher's lag endpoint (its code, served here
 * on the test bed's NATS), takes the function to zero while its consumers have no lag, to one when
 * events wait, and back. The pods are a stand-in, so that the test settles the events itself;
 * test/helm/install.test.ts has Tideway's own pods scaled so, through the watcher's Service.
 */
describe('KEDA scales an event function on its consumer, from the chart', () => {
  const b = bed();
  let ns = '';
  let kedaNs = '';
  let dir = '';
  let bus: Bus | undefined;
  let keda: KedaOperator | undefined;
  let lagServer: ReturnType<typeof serve> | undefined;
  let routes: ReturnType<typeof lagRoutes> | undefined;
  let initial = -1;
  const replicas = async () =>
    Number(
      await b.kubectl('get', 'deploy', `tideway-${FN}-ns-${ns}`, '-n', ns, '-o', 'jsonpath={.spec.replicas}'),
    );
  const atReplicas = (n: number) => async () => ((await replicas()) === n ? true : undefined);

  beforeAll(async () => {
    // Cached after the first build; cold, it takes minutes (docs/helm.md).
    await ensureGoBinaries(log, { keda: true });
    await installKedaCrds(b.info, log);
    ns = await createNamespace(b.core, 'keda-fn');
    kedaNs = await createNamespace(b.core, 'keda');
    dir = await mkdtemp(join(tmpdir(), 'tideway-keda-'));

    // Serving this namespace only: its own consumer, which no other test's functions touch.
    const config = await loadServerless(join(CHART_DIR, '..', '..', '..', 'serverless.yml'));
    const fn = config.functions[FN];
    if (!fn) throw new Error(`serverless.yml has no ${FN}`);
    bus = await connectBus(b.info.natsUrl, 'keda-test');
    await ensureStream(bus.jsm);
    // The consumers as the function's first pod makes them (shared/runtime/consumer.ts).
    await ensureConsumers(bus.jsm, { name: FN, fn, namespace: ns });

    // As the namespace's own watcher serves it.
    routes = lagRoutes(bus.jsm, { namespace: ns });
    const lagPort = await new Promise<number>((resolve) => {
      lagServer = serve(
        { fetch: (r) => (routes as ReturnType<typeof lagRoutes>).fetch(r), hostname: '127.0.0.1', port: 0 },
        (i) => resolve(i.port),
      );
    });
    const { objects } = await render(ns, {
      'keda.enabled': 'true',
      'keda.lagEndpoint': `http://127.0.0.1:${lagPort}`,
      'watchNamespaces[0]': ns,
      'keda.pollingInterval': '1',
      'keda.cooldownPeriod': '5',
      'keda.initialCooldownPeriod': '5',
    });
    const deployment = named(objects, 'Deployment', `tideway-${FN}-ns-${ns}`);
    const pod = deployment.spec.template.spec;
    pod.containers = [{ name: FN, image: 'redis:7.0', args: ['redis-server', '--port', '0'] }];
    pod.serviceAccountName = 'default';
    delete pod.securityContext;
    const scaled = named(objects, 'ScaledObject', `tideway-${FN}-ns-${ns}`);
    await b.kubectlIn([deployment, scaled].map((o) => stringify(o)).join('---\n'), 'apply', '-f', '-');
    initial = await replicas();
    keda = startKedaOperator({ info: b.info, watchNamespace: ns, objectNamespace: kedaNs, dir });
  }, 45 * 60_000);

  afterAll(async () => {
    await keda?.stop();
    lagServer?.close();
    if (bus) await deleteConsumers(bus.jsm, FN, ns);
    await bus?.close();
    for (const n of [ns, kedaNs]) if (n) await b.core.deleteNamespace({ name: n }).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts with one pod (it makes the consumer), then goes to zero while nothing waits', async () => {
    // The chart leaves replicas to KEDA: the API server's default, one.
    expect(initial).toBe(1);
    await until('the Deployment at 0 replicas', atReplicas(0), 90_000).catch((error) => {
      throw new Error(`${error}\nKEDA:\n${keda?.output().slice(-5000)}`);
    });
  });

  it('goes to one pod when events wait, and back to zero once they are settled', async () => {
    if (!bus) throw new Error('no bus');
    for (let i = 0; i < 3; i++)
      await bus.js.publish(
        subjectFor(EventType.updated, { kind: 'RedisCluster', namespace: ns, name: `c${i}` }),
        '{}',
      );
    await until('the Deployment at 1 replica', atReplicas(1), 60_000);
    const active = await b.kubectl(
      'get',
      'scaledobject',
      `tideway-${FN}-ns-${ns}`,
      '-n',
      ns,
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Active")].status}',
    );
    expect(active).toBe('True');

    // Handled as a replica would: from whichever partitions they landed in.
    let settled = 0;
    for (const durable of partitionConsumers(FN, ns)) {
      const consumer = await bus.js.consumers.get(STREAM, durable);
      const waiting = (await consumer.info()).num_pending;
      if (waiting === 0) continue;
      const batch = await consumer.fetch({
        max_messages: waiting,
        expires: 5000,
        group: 'tideway',
        priority: 0,
      });
      for await (const m of batch) {
        m.ack();
        settled++;
      }
    }
    expect(settled).toBe(3);
    await until('the Deployment back at 0 replicas', atReplicas(0), 90_000);
    expect(keda?.exitCode()).toBeNull();
  });

  it("counts a function without consumers as waiting, from NATS's own answer", async () => {
    const res = await routes?.request(`/lag/fn-nothing-ns-${ns}`);
    expect(await res?.json()).toEqual({
      consumer: `fn-nothing-ns-${ns}`,
      lag: 1,
      pending: 0,
      ackPending: 0,
      missing: PARTITIONS,
    });
  });
});
