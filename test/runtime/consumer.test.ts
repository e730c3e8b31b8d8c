import { KubeConfig } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../../shared/bus/connect.ts';
import { jetStreamPublisher } from '../../shared/bus/publisher.ts';
import { ensureStream } from '../../shared/bus/stream.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { objectKeyOf } from '../../shared/events/subjects.ts';
import { type FunctionConfig, parseServerless } from '../../shared/runtime/config.ts';
import { type RunningConsumer, startConsumer } from '../../shared/runtime/consumer.ts';
import { consumerBacklog, deleteConsumers } from '../../shared/runtime/durables.ts';
import type { Handler } from '../../shared/runtime/handler.ts';
import { createLogger } from '../../shared/runtime/logger.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { objectLocks } from '../../shared/runtime/object-lock.ts';
import { bed, until } from '../support/bed.ts';

/** One replica of a test function: its own connection, object locks and consumer, as a worker has. */
const startReplica = async (o: {
  natsUrl: string;
  id: string;
  fnName: string;
  fn: FunctionConfig;
  handler: Handler;
  namespace?: string;
  /** Kept after each run, as in the product (TIDEWAY_LOCK_KEEP_MS), unless 0. */
  keepMs?: number;
}) => {
  const bus = await connectBus(o.natsUrl, `runtime-${o.fnName}-${o.id}`);
  await ensureStream(bus.jsm);
  const deps = {
    kube: new KubeConfig(),
    publisher: jetStreamPublisher(bus.js),
    log: createLogger({ replica: o.id }, { level: 'error' }),
    metrics: createMetrics(),
    clock: () => new Date(),
    env: {},
  };
  const locks = await objectLocks(bus, {
    stream: `LOCKS_${o.fnName}`,
    owner: o.id,
    ttlMs: 6000,
    keepMs: o.keepMs ?? 10_000,
  });
  const consumer = await startConsumer({
    bus,
    name: o.fnName,
    fn: o.fn,
    deps,
    locks,
    handler: o.handler,
    ...(o.namespace ? { namespace: o.namespace } : {}),
  });
  return { bus, consumer };
};

/**
 * A Probe function of a describe's own: its name, its config (`settings`: serverless.yml lines of
 * the function), and a namespace of its own — a new durable consumer is delivered all of the
 * stream's events it matches.
 */
const probeFunction = (prefix: string, settings: string[] = ['reservedConcurrency: 4']) => {
  const fnName = `${prefix}${Date.now() % 100000}`;
  const fn = parseServerless(`
service: t
provider: { name: tideway }
functions:
  ${fnName}:
    handler: x.handler
    events: [ { cloudevent: { type: dev.tideway.resource.*, kind: Probe } } ]
${settings.map((l) => `    ${l}`).join('\n')}
`).functions[fnName]!;
  return { fnName, fn, namespace: `${prefix}-${Math.random().toString(36).slice(2, 7)}` };
};

/** Replicas of one probe function, by id; what is left of them goes after the describe. */
const replicaSet = (info: { natsUrl: string }, p: ReturnType<typeof probeFunction>) => {
  const buses: Bus[] = [];
  const consumers = new Map<string, RunningConsumer>();
  afterAll(async () => {
    for (const c of consumers.values()) await c.stop(1000);
    await deleteConsumers(buses[0]!.jsm, p.fnName, p.namespace);
    await buses[0]?.jsm.streams.delete(`LOCKS_${p.fnName}`).catch(() => undefined);
    for (const bus of buses) await bus.close();
  });
  const start = async (id: string, handler: Handler, keepMs?: number) => {
    const r = await startReplica({
      natsUrl: info.natsUrl,
      id,
      handler,
      ...p,
      ...(keepMs !== undefined ? { keepMs } : {}),
    });
    buses.push(r.bus);
    consumers.set(id, r.consumer);
    return r;
  };
  return { buses, consumers, start };
};

/**
 * The runtime's guarantees on real JetStream, without the watcher: two consumers of one function
 * (as two replicas would be) never run one object twice at once, run distinct objects in
 * parallel, coalesce bursts, and every object's last event is handled.
 */
describe('function runtime on JetStream', () => {
  const { info } = bed();
  const { fnName, fn } = probeFunction('probe', [
    'reservedConcurrency: 4',
    'maximumRetryAttempts: 3',
    'tideway: { initialDelay: 100ms, maxDelay: 200ms }',
  ]);
  const buses: Bus[] = [];
  const consumers: RunningConsumer[] = [];
  const running = new Set<string>();
  const stats = { overlaps: 0, runs: 0, current: 0, maxParallel: 0 };
  const latest: Record<string, number> = {};

  const handler: Handler = async (event) => {
    const e = event as unknown as Record<string, string>;
    const key = e.name as string;
    if (running.has(key)) stats.overlaps++;
    running.add(key);
    stats.current++;
    stats.maxParallel = Math.max(stats.maxParallel, stats.current);
    await new Promise((r) => setTimeout(r, 30));
    running.delete(key);
    stats.current--;
    stats.runs++;
    latest[key] = Math.max(latest[key] ?? 0, Number(e.generation));
  };

  beforeAll(async () => {
    // Locks kept after each run, as in the product: a replica asks the other for what it keeps.
    for (const id of ['a', 'b']) {
      const r = await startReplica({ natsUrl: info.natsUrl, id, fnName, fn, handler });
      buses.push(r.bus);
      consumers.push(r.consumer);
    }
  });

  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.stop(1000)));
    for (const bus of buses) {
      await deleteConsumers(bus.jsm, fnName);
      await bus.jsm.streams.delete(`LOCKS_${fnName}`).catch(() => undefined);
      await bus.close();
    }
  });

  it('serializes per object across replicas, parallelizes across objects, and handles every last event', async () => {
    const publisher = jetStreamPublisher(buses[0]!.js);
    const objects = 20;
    const generations = 25;
    for (let g = 1; g <= generations; g++) {
      await Promise.all(
        Array.from({ length: objects }, (_, i) =>
          publisher.publish(
            new CloudEvent({
              id: eventId(fnName, i, g),
              source: '/test',
              type: 'dev.tideway.resource.updated',
              kind: 'Probe',
              namespace: 'runtime',
              name: `o${i}`,
              generation: String(g),
              data: {},
            }),
          ),
        ),
      );
    }
    await until('every object handled at its last generation', async () =>
      Object.values(latest).filter((g) => g === generations).length === objects ? true : undefined,
    );
    expect(stats.overlaps).toBe(0);
    expect(stats.maxParallel).toBeGreaterThan(1);
    // 500 events, far fewer runs: bursts for a busy object coalesce.
    expect(stats.runs).toBeLessThan(objects * generations);
  });
});

/**
 * Waiting for a lock another replica (or process) holds takes no concurrency slot: with one slot,
 * an object whose lock is held elsewhere does not stop the function's other objects.
 */
describe('function runtime waiting for an object lock', () => {
  const { info } = bed();
  const p = probeFunction('lockwait', ['reservedConcurrency: 1']);
  const { fnName, namespace } = p;
  const handled: { name: string; at: number }[] = [];
  const { start } = replicaSet(info, p);
  let bus: Bus;

  beforeAll(async () => {
    ({ bus } = await start(
      'replica',
      async (event) => {
        handled.push({ name: (event as unknown as Record<string, string>).name as string, at: Date.now() });
      },
      0,
    ));
  });

  it('handles other objects at once while one waits for its lock, with a single slot', async () => {
    const elsewhere = await objectLocks(bus, { stream: `LOCKS_${fnName}`, owner: 'elsewhere', ttlMs: 6000 });
    const held = await elsewhere.acquire(objectKeyOf({ kind: 'Probe', namespace, name: 'a' }), {});
    const publisher = jetStreamPublisher(bus.js);
    const publish = (name: string) =>
      publisher.publish(
        new CloudEvent({
          id: eventId(fnName, name),
          source: '/test',
          type: 'dev.tideway.resource.updated',
          kind: 'Probe',
          namespace,
          name,
          data: {},
        }),
      );
    await publish('a');
    await until(
      'a delivered (and waiting for its lock)',
      async () => ((await consumerBacklog(bus.jsm, fnName, namespace)).ackPending === 1 ? true : undefined),
      5000,
      20,
    );
    const sent = Date.now();
    await publish('b');
    const b = await until(
      'b handled while the lock of a is held elsewhere',
      async () => handled.find((h) => h.name === 'b'),
      5000,
      20,
    );
    expect(b.at - sent).toBeLessThan(2000);
    expect(handled.map((h) => h.name)).toEqual(['b']);
    await held.release();
    await until('a handled once its lock is free', async () => handled.find((h) => h.name === 'a'), 5000, 20);
  });
});

/**
 * Partitions: each replica comes first for a share of them, so an object's events keep going to
 * one replica (its kept lock needs no round trip there), and a replica that stops hands its share
 * to the others at once.
 */
describe('function runtime partitions', () => {
  const { info } = bed();
  const p = probeFunction('parts');
  const { fnName, namespace } = p;
  const runs: { replica: string; name: string; g: number; at: number }[] = [];
  const { buses, consumers, start } = replicaSet(info, p);
  const replica = (id: string) =>
    start(id, async (event) => {
      const e = event as unknown as Record<string, string>;
      runs.push({ replica: id, name: e.name as string, g: Number(e.generation), at: Date.now() });
    });

  beforeAll(async () => {
    for (const id of ['a', 'b']) await replica(id);
  });

  const publishAll = async (objects: number, g: number) => {
    const publisher = jetStreamPublisher(buses[0]!.js);
    for (let i = 0; i < objects; i++)
      await publisher.publish(
        new CloudEvent({
          id: eventId(fnName, i, g),
          source: '/test',
          type: 'dev.tideway.resource.updated',
          kind: 'Probe',
          namespace,
          name: `o${i}`,
          generation: String(g),
          data: {},
        }),
      );
  };
  const handledAt = (objects: number, g: number) => async () =>
    runs.filter((r) => r.g === g).length >= objects ? true : undefined;

  it("sends each object's events to one replica, sharing the objects between replicas", async () => {
    // The first replica started alone, first for every partition; the second took its share
    // from what the first answered, and the first leaves that share from its next pull (5 s).
    await new Promise((r) => setTimeout(r, 6000));
    const objects = 24;
    for (let g = 1; g <= 5; g++) {
      await publishAll(objects, g);
      await until(`generation ${g} handled`, handledAt(objects, g));
    }
    const replicasOf = new Map<string, Set<string>>();
    for (const r of runs) replicasOf.set(r.name, (replicasOf.get(r.name) ?? new Set()).add(r.replica));
    expect([...replicasOf.values()].filter((s) => s.size > 1)).toEqual([]);
    const perReplica = (id: string) => [...replicasOf.values()].filter((s) => s.has(id)).length;
    expect(perReplica('a')).toBeGreaterThan(0);
    expect(perReplica('b')).toBeGreaterThan(0);
  });

  it("hands a stopped replica's objects to the other at once", async () => {
    await consumers.get('b')?.stop(1000);
    consumers.delete('b');
    const objects = 24;
    const sent = Date.now();
    await publishAll(objects, 6);
    await until('generation 6 handled', handledAt(objects, 6), 10_000, 20);
    const last = runs.filter((r) => r.g === 6);
    expect(new Set(last.map((r) => r.replica))).toEqual(new Set(['a']));
    expect(Math.max(...last.map((r) => r.at)) - sent).toBeLessThan(3000);
  });
  it("hands a crashed replica's objects to the others without waiting for its pulls to expire", async () => {
    // A third replica takes its share, then dies without a word: its connection just closes.
    const c = await replica('c');
    await new Promise((r) => setTimeout(r, 6000)); // a moves off c's share from its next pull
    const objects = 24;
    await publishAll(objects, 7);
    await until('generation 7 handled', handledAt(objects, 7), 10_000, 20);
    const mine = new Set(runs.filter((r) => r.g === 7 && r.replica === 'c').map((r) => r.name));
    expect(mine.size).toBeGreaterThan(0);
    await c.bus.nc.close();
    consumers.delete('c');
    void c.consumer.stop(0).catch(() => undefined); // only its timers: it has no connection
    // What the server routed to c before it saw the connection go comes back after ack_wait, as
    // with any crash; this is about what comes after.
    await new Promise((r) => setTimeout(r, 1000));
    const sent = Date.now();
    await publishAll(objects, 8);
    // Well within ack_wait (60 s here): c's pulls went with its connection. Its kept locks age
    // out (TTL 6 s) before a may run c's objects.
    await until('generation 8 handled', handledAt(objects, 8), 20_000, 50);
    const last = runs.filter((r) => r.g === 8);
    expect(new Set(last.map((r) => r.replica))).toEqual(new Set(['a']));
    expect(Math.max(...last.map((r) => r.at)) - sent).toBeLessThan(12_000);
  });
});

/**
 * A replica joining while events flow: the partitions move to it from the others' next pulls,
 * and during the move an object's events may reach two replicas — the object lock keeps them
 * from running at once, and no object's last event is lost. Once settled, each object is with
 * one replica again.
 */
describe('function runtime partitions, a replica joining under load', () => {
  const { info } = bed();
  const p = probeFunction('join');
  const { fnName, namespace } = p;
  const runs: { replica: string; name: string; g: number; at: number }[] = [];
  const running = new Set<string>();
  const overlaps: string[] = [];
  const handled: Record<string, number> = {};
  const { buses, start } = replicaSet(info, p);
  const replica = (id: string) =>
    start(id, async (event) => {
      const e = event as unknown as Record<string, string>;
      const name = e.name as string;
      if (running.has(name)) overlaps.push(`${name} on ${id}`);
      running.add(name);
      runs.push({ replica: id, name, g: Number(e.generation), at: Date.now() });
      await new Promise((r) => setTimeout(r, 5));
      running.delete(name);
      handled[name] = Math.max(handled[name] ?? 0, Number(e.generation));
    });

  beforeAll(async () => {
    for (const id of ['a', 'b']) await replica(id);
    await new Promise((r) => setTimeout(r, 6000)); // a leaves b's share from its next pull
  });

  it('loses no last event and never runs an object twice at once; then each object is with one replica', async () => {
    const publisher = jetStreamPublisher(buses[0]!.js);
    const published: Record<string, number> = {};
    const start = Date.now();
    let joined = 0;
    let joining: Promise<void> | undefined;
    // ~80 events a second for 14 s, each object a burst of 5 over ~0.1 s and then no more, so
    // there are last events all along, also while the third replica joins (2 s in).
    for (let tick = 0; Date.now() - start < 14_000; tick++) {
      if (!joining && Date.now() - start > 2000)
        joining = replica('c').then(() => {
          joined = Date.now();
        });
      await Promise.all(
        Array.from({ length: 2 }, (_, k) => {
          const name = `o${Math.floor(tick / 5)}-${k}`;
          const g = (published[name] ?? 0) + 1;
          published[name] = g;
          return publisher.publish(
            new CloudEvent({
              id: eventId(fnName, name, g),
              source: '/test',
              type: 'dev.tideway.resource.updated',
              kind: 'Probe',
              namespace,
              name,
              generation: String(g),
              data: {},
            }),
          );
        }),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
    await joining;
    // Well within ack_wait (60 s): a message lost to both sides would come back only then.
    await until(
      'every object handled at its last generation',
      async () =>
        Object.keys(published).every((name) => handled[name] === published[name]) ? true : undefined,
      15_000,
    );
    expect(overlaps).toEqual([]);
    // Settled within 6 s of the join (the others move at their next pull, 5 s at most): from
    // then on, an object's events run on one replica, and the new one has its share.
    const settled = runs.filter((r) => r.at > joined + 6000);
    expect(settled.length).toBeGreaterThan(50);
    const replicasOf = new Map<string, Set<string>>();
    for (const r of settled) replicasOf.set(r.name, (replicasOf.get(r.name) ?? new Set()).add(r.replica));
    expect([...replicasOf.entries()].filter(([, s]) => s.size > 1)).toEqual([]);
    expect(new Set(settled.map((r) => r.replica))).toEqual(new Set(['a', 'b', 'c']));
  });
});
