import type { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/runtime/logger.ts';
import { createMetrics } from '../../shared/runtime/metrics.ts';
import { type CursorEntry, memoryCursorStore } from './cursor.ts';
import { type KubeObj, WATCHED } from './kinds.ts';
import { createSync } from './sync.ts';

const rdc = WATCHED.find((w) => w.kind === 'RedisCluster')!;
const obj = (name: string, rv: string, uid = `uid-${name}`): KubeObj => ({
  metadata: { name, namespace: 'ns', uid, resourceVersion: rv, generation: Number(rv) },
});

/** A publisher that records, and can be told to fail or to hold events until released. */
const recorder = () => {
  const events: CloudEvent<unknown>[] = [];
  let failures = 0;
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  return {
    events,
    failNext: (n: number) => {
      failures = n;
    },
    hold: () => {
      gate = new Promise((r) => {
        open = r;
      });
    },
    release: () => {
      open?.();
      gate = undefined;
    },
    publish: async (e: CloudEvent<unknown>) => {
      if (gate) await gate;
      if (failures > 0) {
        failures--;
        throw new Error('bus down');
      }
      events.push(e);
      return { duplicate: false, seq: events.length };
    },
    seen: () =>
      events.map((e) => `${e.type.replace('dev.tideway.resource.', '')} ${e.name}@${e.resourceversion}`),
  };
};

const setup = (cursor = new Map<string, CursorEntry>(), concurrency?: number) => {
  const publisher = recorder();
  const store = memoryCursorStore();
  for (const [k, v] of cursor) store.entries.set(k, v);
  const sync = createSync({
    source: '/s',
    publisher,
    store,
    cursor,
    log: createLogger({}, { write: () => undefined }),
    metrics: createMetrics(),
    ...(concurrency ? { concurrency } : {}),
  });
  return { publisher, store, sync };
};

describe('watcher sync', () => {
  it('announces new objects as added and later versions as updated, each once', async () => {
    const { publisher, sync } = setup();
    sync.list(rdc, [obj('a', '1'), obj('b', '2')]);
    await sync.idle();
    sync.observe(rdc, 'MODIFIED', obj('a', '3'));
    sync.observe(rdc, 'MODIFIED', obj('a', '3')); // repeated by a relist or a re-watch
    await sync.idle();
    sync.list(rdc, [obj('a', '3'), obj('b', '2')]);
    await sync.idle();
    expect(publisher.seen()).toEqual(['added a@1', 'added b@2', 'updated a@3']);
  });

  it('publishes only the latest state of an object that changed while it waited', async () => {
    const { publisher, sync } = setup();
    publisher.hold();
    sync.observe(rdc, 'ADDED', obj('a', '1'));
    for (let rv = 2; rv <= 50; rv++) sync.observe(rdc, 'MODIFIED', obj('a', String(rv)));
    publisher.release();
    await sync.idle();
    expect(publisher.seen()).toEqual(['added a@1', 'updated a@50']);
  });

  it('announces objects deleted while no one watched, from the cursor', async () => {
    const cursor = new Map<string, CursorEntry>([
      ['RedisCluster.ns.gone', { kind: 'RedisCluster', namespace: 'ns', name: 'gone', uid: 'u-g', rv: '5' }],
      [
        'RedisCluster.ns.kept',
        { kind: 'RedisCluster', namespace: 'ns', name: 'kept', uid: 'uid-kept', rv: '6' },
      ],
    ]);
    const { publisher, store, sync } = setup(cursor);
    sync.list(rdc, [obj('kept', '6')]);
    await sync.idle();
    expect(publisher.seen()).toEqual(['deleted gone@5']);
    expect([...store.entries.keys()]).toEqual(['RedisCluster.ns.kept']);
  });

  it('deletes only when a paged list ends: a list that fails midway deletes nothing', async () => {
    const entry = (name: string) => ({
      kind: 'RedisCluster',
      namespace: 'ns',
      name,
      uid: `uid-${name}`,
      rv: '1',
    });
    const cursor = new Map<string, CursorEntry>([
      ['RedisCluster.ns.a', entry('a')],
      ['RedisCluster.ns.b', entry('b')],
    ]);
    const { publisher, sync } = setup(cursor);
    const broken = sync.beginList(rdc);
    broken.page([obj('a', '1')]); // the next page never came
    await sync.idle();
    expect(publisher.seen()).toEqual([]);
    const whole = sync.beginList(rdc);
    whole.page([obj('a', '1')]);
    whole.page([obj('c', '2')]);
    await sync.idle();
    expect(publisher.seen()).toEqual(['added c@2']);
    whole.end();
    await sync.idle();
    expect(publisher.seen()).toEqual(['added c@2', 'deleted b@1']);
  });

  it('holds a paged list back while too much waits to be published', async () => {
    const { publisher, sync } = setup(undefined, 2);
    publisher.hold();
    sync.beginList(rdc).page(Array.from({ length: 10 }, (_, i) => obj(`o${i}`, '1')));
    let drained = false;
    const d = sync.drained(3).then(() => {
      drained = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(drained).toBe(false); // 8 wait, 2 in flight
    publisher.release();
    await d;
    await sync.idle();
    expect(publisher.events).toHaveLength(10);
  });

  it('treats a new uid under a known name as a delete then an add', async () => {
    const cursor = new Map<string, CursorEntry>([
      ['RedisCluster.ns.a', { kind: 'RedisCluster', namespace: 'ns', name: 'a', uid: 'old', rv: '5' }],
    ]);
    const { publisher, sync } = setup(cursor);
    sync.list(rdc, [obj('a', '9', 'new')]);
    await sync.idle();
    expect(publisher.events.map((e) => [e.type, e.uid])).toEqual([
      ['dev.tideway.resource.deleted', 'old'],
      ['dev.tideway.resource.added', 'new'],
    ]);
  });

  it('never announces the delete of an object it never announced', async () => {
    const { publisher, sync } = setup(new Map(), 1);
    publisher.hold();
    sync.observe(rdc, 'ADDED', obj('a', '1'));
    sync.observe(rdc, 'ADDED', obj('b', '1'));
    sync.observe(rdc, 'DELETED', obj('b', '2'));
    publisher.release();
    await sync.idle();
    // a was in flight (the only slot) before b's delete; b's add and delete coalesced into nothing.
    expect(publisher.seen()).toEqual(['added a@1']);
  });

  it('moves the cursor only after the bus acked, and retries until it does', async () => {
    const { publisher, store, sync } = setup();
    publisher.failNext(2);
    sync.observe(rdc, 'ADDED', obj('a', '1'));
    await new Promise((r) => setTimeout(r, 20));
    expect(store.entries.size).toBe(0);
    await sync.idle();
    expect(publisher.seen()).toEqual(['added a@1']);
    expect(store.entries.get('RedisCluster.ns.a')).toMatchObject({ uid: 'uid-a', rv: '1' });
  });

  it('leaves what it did not publish unpublished at stop, for the next leader', async () => {
    const { publisher, store, sync } = setup();
    publisher.hold();
    sync.observe(rdc, 'ADDED', obj('a', '1'));
    sync.observe(rdc, 'ADDED', obj('b', '1'));
    const stopped = sync.stop();
    publisher.release();
    await stopped;
    // What was in flight finished; nothing new started after stop.
    expect(publisher.events.length).toBe(store.entries.size);
  });

  it('publishes distinct objects concurrently but one object at a time', async () => {
    const { publisher, sync } = setup();
    let inFlight = 0;
    let peak = 0;
    const perObject = new Map<string, number>();
    let overlap = false;
    const inner = publisher.publish;
    publisher.publish = async (e) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      const n = (perObject.get(e.name as string) ?? 0) + 1;
      perObject.set(e.name as string, n);
      if (n > 1) overlap = true;
      await new Promise((r) => setTimeout(r, 5));
      perObject.set(e.name as string, n - 1);
      inFlight--;
      return inner(e);
    };
    for (let rv = 1; rv <= 5; rv++)
      for (let i = 0; i < 20; i++) {
        sync.observe(rdc, rv === 1 ? 'ADDED' : 'MODIFIED', obj(`o${i}`, String(rv)));
        await new Promise((r) => setTimeout(r, 1));
      }
    await sync.idle();
    expect(overlap).toBe(false);
    expect(peak).toBeGreaterThan(1);
    // Every object's last announced version is its latest.
    const last = new Map(publisher.events.map((e) => [e.name, e.resourceversion]));
    expect([...last.values()].every((rv) => rv === '5')).toBe(true);
  });
});

describe('watcher sync, status-only changes', () => {
  it('does not announce a change that only touched status, but does announce spec and metadata changes', async () => {
    const { publisher, sync } = setup();
    const rc = (rv: string, generation: number, extra: Record<string, unknown> = {}): KubeObj => ({
      metadata: { name: 'a', namespace: 'ns', uid: 'u', resourceVersion: rv, generation, ...extra },
    });
    sync.observe(rdc, 'ADDED', rc('1', 1));
    await sync.idle();
    sync.observe(rdc, 'MODIFIED', rc('2', 1)); // a function wrote status
    await sync.idle();
    sync.observe(rdc, 'MODIFIED', rc('3', 2)); // the user changed spec
    await sync.idle();
    sync.observe(rdc, 'MODIFIED', rc('4', 2, { labels: { team: 'x' } }));
    await sync.idle();
    sync.list(rdc, [rc('4', 2, { labels: { team: 'x' } })]); // a relist finds nothing new
    await sync.idle();
    expect(publisher.seen()).toEqual(['added a@1', 'updated a@3', 'updated a@4']);
  });
});
