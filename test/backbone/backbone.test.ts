import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromMessage } from '../../shared/events/nats-binding.ts';
import { encodeToken, STREAM } from '../../shared/events/subjects.ts';
import { type Condition, findCondition } from '../../shared/kube/conditions.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { BEHAVIOUR } from '../fixtures/functions/recorder.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { readRecords, spawnWorker, type Worker } from '../support/functions.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
type Rdc = {
  metadata: { name: string; generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[] };
};

/**
 * The event backbone end to end: real API server, the real watcher, NATS JetStream and the
 * function runtime running a test-only function (test/fixtures/functions/recorder.ts) in two
 * replicas, each its own process.
 */
describe('event backbone', () => {
  const b = bed();
  const custom = b.kc.makeApiClient(CustomObjectsApi);
  let ns = '';
  let dir = '';
  let env: Record<string, string> = {};
  let watcher: Worker | undefined;
  const recorders: Worker[] = [];

  const create = (name: string, annotations: Record<string, string> = {}) =>
    custom.createNamespacedCustomObject({
      ...RDC,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name, annotations },
        spec: { replicas: 1 },
      },
    });
  const bump = (name: string, i: number) =>
    custom.patchNamespacedCustomObject({
      ...RDC,
      namespace: ns,
      name,
      body: [{ op: 'replace', path: '/spec/replicas', value: 1 + (i % 9) }],
    });
  const get = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...RDC, namespace: ns, name })) as Rdc;
  const allObservedLatest = async (names: readonly string[]) => {
    for (const name of names) {
      const o = await get(name);
      if (o.status?.observedGeneration !== o.metadata.generation) return undefined;
    }
    return true;
  };
  const startWatcher = () => {
    watcher = spawnWorker('watcher', { ...env, TIDEWAY_WATCHER_ID: `w-${Date.now()}` });
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'backbone');
    dir = await mkdtemp(join(tmpdir(), 'tideway-recorder-'));
    env = {
      NATS_URL: b.info.natsUrl,
      KUBECONFIG: b.info.kubeconfig,
      RECORDER_DIR: dir,
      RECORDER_NAMESPACE: ns,
      // These tests are about resource events; health ticks for ~300 objects are noise here.
      TIDEWAY_HEALTH_INTERVAL: '60s',
    };
    startWatcher();
    for (let r = 0; r < 2; r++)
      recorders.push(spawnWorker('recorder', { ...env, TIDEWAY_REPLICA: String(r) }));
  });

  afterAll(async () => {
    await Promise.all([watcher?.stop(), ...recorders.map((w) => w.stop())]);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('handles each of 200 new objects, and status shows the generation observed', async () => {
    const names = Array.from({ length: 200 }, (_, i) => `obj-${i}`);
    for (let i = 0; i < names.length; i += 20)
      await Promise.all(names.slice(i, i + 20).map((n) => create(n)));
    await until('all 200 observed', () => allObservedLatest(names), 180_000, 1000);
    const o = await get('obj-7');
    expect(findCondition(o.status?.conditions, 'Recorded')).toMatchObject({
      status: 'True',
      observedGeneration: o.metadata.generation,
    });
    const seen = new Set(readRecords(dir).map((r) => r.name));
    for (const n of names) expect(seen.has(n)).toBe(true);
  });

  it('puts binary-mode CloudEvents on the bus that the SDK validates', async () => {
    const nc = await connect({ servers: b.info.natsUrl });
    try {
      const js = jetstream(nc);
      const consumer = await js.consumers.get(STREAM, {
        filter_subjects: [`tideway.resource.*.RedisCluster.${encodeToken(ns)}.>`],
      });
      const msg = await consumer.next({ expires: 5000 });
      expect(msg).toBeTruthy();
      const h = msg!.headers!;
      for (const k of [
        'ce-specversion',
        'ce-id',
        'ce-source',
        'ce-type',
        'ce-subject',
        'ce-kind',
        'ce-namespace',
        'ce-name',
        'ce-traceparent',
      ]) {
        expect(h.get(k), k).not.toBe('');
      }
      expect(h.get('content-type')).toBe('application/json');
      expect(h.get('Nats-Msg-Id')).toBe(h.get('ce-id'));
      const event = fromMessage(h, msg!.data);
      expect(event.validate()).toBe(true);
      expect(event.type).toMatch(/^dev\.tideway\.resource\./);
    } finally {
      await nc.close();
    }
  });

  it('handles every final generation when the watcher is SIGKILLed during 1,000 updates, and deletes made while it was down', async () => {
    const names = Array.from({ length: 50 }, (_, i) => `upd-${i}`);
    await Promise.all(names.map((n) => create(n)));
    const doomed = names.slice(40);
    for (let round = 1; round <= 20; round++) {
      // After round 14 the doomed objects are gone: bump only what exists.
      await Promise.all((round > 14 ? names.slice(0, 40) : names).map((n) => bump(n, round)));
      if (round === 8) await watcher?.kill();
      if (round === 14) {
        for (const n of doomed) await custom.deleteNamespacedCustomObject({ ...RDC, namespace: ns, name: n });
        startWatcher();
      }
    }
    const kept = names.slice(0, 40);
    await until('final generations observed', () => allObservedLatest(kept), 180_000, 1000);
    await until(
      'deletes delivered',
      async () => {
        const deleted = new Set(
          readRecords(dir)
            .filter((r) => r.type === 'dev.tideway.resource.deleted')
            .map((r) => r.name),
        );
        return doomed.every((n) => deleted.has(n)) ? true : undefined;
      },
      60_000,
      500,
    );
  });

  it('loses nothing when NATS is killed and restarted during a burst', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `nats-${i}`);
    await Promise.all(names.map((n) => create(n)));
    for (let round = 1; round <= 6; round++) {
      await Promise.all(names.map((n) => bump(n, round)));
      if (round === 3) await b.faults.component('nats', 'kill');
      if (round === 4) await b.faults.component('nats', 'start');
    }
    await until(
      'final generations observed after the NATS restart',
      () => allObservedLatest(names),
      180_000,
      1000,
    );
  });

  it('retries a temporary error after its delay', async () => {
    await create('flaky', { [BEHAVIOUR]: 'temporary:2' });
    await until('flaky observed', () => allObservedLatest(['flaky']), 60_000, 500);
    const tries = readRecords(dir).filter((r) => r.name === 'flaky' && r.mode === 'temporary');
    expect(tries.map((t) => t.attempt).slice(0, 3)).toEqual([1, 2, 3]);
    for (let i = 1; i < 3; i++) expect(tries[i]!.started - tries[i - 1]!.ended).toBeGreaterThanOrEqual(250);
  });

  it('turns a terminal error into a condition and an Event, with no more deliveries, without delaying others', async () => {
    await create('poison', { [BEHAVIOUR]: 'terminal' });
    const others = Array.from({ length: 20 }, (_, i) => `healthy-${i}`);
    await Promise.all(others.map((n) => create(n)));
    await until('others observed', () => allObservedLatest(others), 60_000, 500);
    const poison = await until(
      'poison condition',
      async () => {
        const c = findCondition((await get('poison')).status?.conditions, 'Recorded');
        return c?.status === 'False' ? c : undefined;
      },
      60_000,
      500,
    );
    expect(poison).toMatchObject({ reason: 'TestPoison', message: expect.stringContaining('fail for good') });
    const events = await b.kc
      .makeApiClient((await import('@kubernetes/client-node')).EventsV1Api)
      .listNamespacedEvent({ namespace: ns });
    expect(
      events.items.some(
        (e) => e.regarding?.name === 'poison' && e.reason === 'TestPoison' && e.type === 'Warning',
      ),
    ).toBe(true);
    const before = readRecords(dir).filter((r) => r.name === 'poison').length;
    await sleep(3000);
    expect(readRecords(dir).filter((r) => r.name === 'poison').length).toBe(before);
    expect(before).toBe(1);
  });

  it('reports retries exhausted the same way', async () => {
    await create('hopeless', { [BEHAVIOUR]: 'temporary:100' });
    const c = await until(
      'exhausted condition',
      async () => {
        const cond = findCondition((await get('hopeless')).status?.conditions, 'Recorded');
        return cond?.status === 'False' ? cond : undefined;
      },
      60_000,
      500,
    );
    expect(c.reason).toBe('RetriesExhausted');
    expect(readRecords(dir).filter((r) => r.name === 'hopeless')).toHaveLength(4);
  });

  it('never runs two handlers on one object at once, yet runs distinct objects in parallel on both replicas', async () => {
    const names = Array.from({ length: 16 }, (_, i) => `par-${i}`);
    await Promise.all(names.map((n) => create(n, { [BEHAVIOUR]: 'slow:400' })));
    for (let round = 1; round <= 5; round++) await Promise.all(names.map((n) => bump(n, round)));
    await until('all observed', () => allObservedLatest(names), 120_000, 1000);
    const recs = readRecords(dir).filter((r) => r.name.startsWith('par-'));
    expect(recs.filter((r) => r.overlap)).toEqual([]);
    expect(new Set(recs.map((r) => r.pid)).size).toBe(2);
    // Some two runs on different objects overlapped in time.
    const parallel = recs.some((a) =>
      recs.some((c) => c.name !== a.name && c.started < a.ended && a.started < c.ended),
    );
    expect(parallel).toBe(true);
  });
});
