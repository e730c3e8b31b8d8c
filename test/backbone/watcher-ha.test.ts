import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { readRecords, spawnWorker, type Worker } from '../support/functions.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
const LEASE_SECONDS = 3;

/**
 * Two watcher replicas: one leads (holds the Lease) and publishes, the other stands by. A crash of
 * the leader hands over within the lease duration, a graceful stop at once, and nothing made in
 * between is lost. Scoped to one namespace (its own Lease and cursor bucket), so it cannot disturb
 * or be disturbed by other tests' watchers.
 */
describe('watcher high availability', () => {
  const b = bed();
  const custom = b.kc.makeApiClient(CustomObjectsApi);
  const leases = b.kc.makeApiClient(CoordinationV1Api);
  let ns = '';
  let dir = '';
  let env: Record<string, string> = {};
  const watchers = new Map<string, Worker>();
  let recorder: Worker | undefined;

  const startWatcher = (id: string) =>
    watchers.set(id, spawnWorker('watcher', { ...env, TIDEWAY_WATCHER_ID: id }));
  const holder = async () =>
    (
      await leases
        .readNamespacedLease({ namespace: 'tideway-system', name: `tideway-watcher-${ns}` })
        .catch(() => undefined)
    )?.spec?.holderIdentity ?? '';
  const create = (name: string) =>
    custom.createNamespacedCustomObject({
      ...RDC,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'RedisCluster',
        metadata: { name },
        spec: { replicas: 1 },
      },
    });
  const recorded = (names: readonly string[]) =>
    until(
      `${names.join(', ')} recorded`,
      async () => {
        const seen = new Set(readRecords(dir).map((r) => r.name));
        return names.every((n) => seen.has(n)) ? true : undefined;
      },
      60_000,
      250,
    );
  const addedEvents = (name: string) =>
    readRecords(dir).filter((r) => r.name === name && r.type === 'dev.tideway.resource.added');

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'ha');
    dir = await mkdtemp(join(tmpdir(), 'tideway-ha-'));
    env = {
      NATS_URL: b.info.natsUrl,
      KUBECONFIG: b.info.kubeconfig,
      RECORDER_DIR: dir,
      RECORDER_NAMESPACE: ns,
      TIDEWAY_WATCH_NAMESPACE: ns,
      TIDEWAY_LEASE_DURATION: `${LEASE_SECONDS}s`,
      TIDEWAY_HEALTH_INTERVAL: '60s',
    };
    recorder = spawnWorker('recorder', env);
  });

  afterAll(async () => {
    await Promise.all([recorder?.stop(), ...[...watchers.values()].map((w) => w.stop())]);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('has one leader that keeps its Lease, and one publisher', async () => {
    startWatcher('ha-a');
    startWatcher('ha-b');
    const first = await until('a leader', async () => (await holder()) || undefined, 30_000, 200);
    expect(['ha-a', 'ha-b']).toContain(first);
    await create('one');
    await recorded(['one']);
    // Renewals keep it: over two lease durations the holder never changes.
    for (let i = 0; i < 8; i++) {
      await sleep(LEASE_SECONDS * 250);
      expect(await holder()).toBe(first);
    }
    expect(addedEvents('one')).toHaveLength(1);
  });

  it('hands over within the lease duration when the leader is killed, losing nothing made meanwhile', async () => {
    const leader = await holder();
    const standby = leader === 'ha-a' ? 'ha-b' : 'ha-a';
    await watchers.get(leader)?.kill();
    const killedAt = Date.now();
    const names = Array.from({ length: 10 }, (_, i) => `during-${i}`);
    await Promise.all(names.map((n) => create(n)));
    await until(
      'the standby leads',
      async () => ((await holder()) === standby ? true : undefined),
      30_000,
      100,
    );
    const handover = Date.now() - killedAt;
    // Expiry by the standby's clock, plus at most one look (every lease/3) to notice it.
    expect(handover).toBeLessThan(LEASE_SECONDS * 1000 + 1000 + 1500);
    await recorded(names);
    for (const n of names) expect(addedEvents(n)).toHaveLength(1);
  });

  it('hands over at once on a graceful stop, which releases the Lease', async () => {
    const leader = await holder();
    startWatcher('ha-c');
    await sleep(500); // ha-c is up and standing by
    const stoppedAt = Date.now();
    await watchers.get(leader)?.stop();
    await until('ha-c leads', async () => ((await holder()) === 'ha-c' ? true : undefined), 30_000, 100);
    // No waiting for expiry: the next look (every lease/3) finds the Lease free.
    expect(Date.now() - stoppedAt).toBeLessThan(LEASE_SECONDS * 1000);
    await create('after');
    await recorded(['after']);
    await custom.deleteNamespacedCustomObject({ ...RDC, namespace: ns, name: 'one' });
    await until(
      'delete recorded',
      async () =>
        readRecords(dir).some((r) => r.name === 'one' && r.type === 'dev.tideway.resource.deleted') ||
        undefined,
      30_000,
      250,
    );
  });
});
