import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { redisClusters, refusals, startRedisFunctions } from '../support/redis.ts';

type Cond = { type: string; status: string; reason: string; message: string };

/**
 * Issue 13, item 2, reconcile's side: a cluster created from a backup is never an empty Ready
 * cluster. Only the Redis functions run: the test plays the backup and restore functions by
 * writing their objects' status, so what is checked is reconcile's contract with them.
 */
describe('bootstrap.fromBackup', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const ready = async (name: string) =>
    ((await rdc.get(name)).status?.conditions as Cond[] | undefined)?.find((c) => c.type === 'Ready');
  const setStatus = (kind: 'Backup' | 'Restore', name: string, status: Record<string, unknown>) =>
    b.custom.patchNamespacedCustomObjectStatus(
      { ...TIDEWAY_KINDS[kind], namespace: ns, name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  /** A Backup of another cluster (cloning is what bootstrap is for); the test plays its status. */
  const createBackup = (name: string) =>
    b.custom.createNamespacedCustomObject({
      ...TIDEWAY_KINDS.Backup,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Backup',
        metadata: { name },
        spec: { cluster: { name: 'origin' }, deletionPolicy: 'Retain' },
      },
    });

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'bootstrap');
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('waits for a missing backup with a reason, loads it through a Restore it owns, and only then is Ready', async () => {
    workers = await startRedisFunctions(b, ns, `boot-${ns}`, { replicas: { reconcile: 1, health: 1 } });
    await rdc.apply('clone', { replicas: 1, bootstrap: { fromBackup: { name: 'golden' } } });
    const missing = await until(
      'Ready=False BackupNotFound',
      async () => {
        const c = await ready('clone');
        return c?.reason === 'BackupNotFound' ? c : undefined;
      },
      60_000,
      250,
    );
    expect(missing.status).toBe('False');
    expect(missing.message).toContain('Backup golden');
    // The server runs and serves, and still the cluster is not Ready: it has no data yet.
    await sleep(3000);
    expect((await rdc.get('clone')).status?.phase).toBe('Creating');

    // The backup appears (of another cluster: cloning is what bootstrap is for) and completes.
    await createBackup('golden');
    const at = new Date().toISOString();
    await setStatus('Backup', 'golden', { phase: 'Completed', startedAt: at, completedAt: at });
    const restore = await until(
      'the Restore clone-bootstrap',
      async () =>
        b.custom
          .getNamespacedCustomObject({ ...TIDEWAY_KINDS.Restore, namespace: ns, name: 'clone-bootstrap' })
          .catch(() => undefined) as Promise<
          | {
              metadata: { ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
              spec: Record<string, unknown>;
            }
          | undefined
        >,
      30_000,
      250,
    );
    expect(restore.spec).toMatchObject({
      cluster: { name: 'clone' },
      source: { backup: { name: 'golden' } },
      safetyBackup: false,
    });
    expect(restore.metadata.ownerReferences).toMatchObject([
      { kind: 'RedisCluster', name: 'clone', controller: true },
    ]);
    await until(
      'Ready=False Restoring',
      async () => ((await ready('clone'))?.reason === 'Restoring' ? true : undefined),
      30_000,
      250,
    );

    // The restore function reports it loaded the data: now, and only now, Ready.
    await setStatus('Restore', 'clone-bootstrap', {
      phase: 'Completed',
      completedAt: new Date().toISOString(),
    });
    const rc = (await rdc.ready('clone', 60_000)) as RedisCluster;
    expect(rc.status?.bootstrap?.completedAt).toBeTruthy();
    // Recorded once: deleting the Restore does not load the backup again.
    await b.custom.deleteNamespacedCustomObject({
      ...TIDEWAY_KINDS.Restore,
      namespace: ns,
      name: 'clone-bootstrap',
    });
    await rdc.apply('clone', {
      replicas: 1,
      bootstrap: { fromBackup: { name: 'golden' } },
      config: { 'maxmemory-policy': 'noeviction' },
    });
    await rdc.ready('clone', 60_000);
    await expect(
      b.custom.getNamespacedCustomObject({
        ...TIDEWAY_KINDS.Restore,
        namespace: ns,
        name: 'clone-bootstrap',
      }),
    ).rejects.toThrow();
  });
  it('never Ready from a failed backup or a failed load: Failed, with the reason and what to do', async () => {
    workers = await startRedisFunctions(b, ns, `boot-${ns}`, { replicas: { reconcile: 1, health: 1 } });
    const readyWith = (name: string, reason: string) =>
      until(
        `${name}: Ready=False ${reason}`,
        async () => {
          const c = await ready(name);
          return c?.reason === reason ? c : undefined;
        },
        60_000,
        250,
      );

    // A Failed backup: the cluster says so and never loads it.
    await createBackup('broken');
    await setStatus('Backup', 'broken', {
      phase: 'Failed',
      error: { reason: 'SourceUnavailable', message: 'no source' },
    });
    await rdc.apply('from-broken', { replicas: 1, bootstrap: { fromBackup: { name: 'broken' } } });
    const failed = await readyWith('from-broken', 'BackupFailed');
    expect(failed.status).toBe('False');
    expect(failed.message).toMatch(/Backup broken .*failed \(SourceUnavailable\).*name a Completed backup/);
    expect((await rdc.get('from-broken')).status).toMatchObject({
      phase: 'Failed',
      bootstrap: { failed: true, reason: 'BackupFailed' },
    });
    await expect(
      b.custom.getNamespacedCustomObject({
        ...TIDEWAY_KINDS.Restore,
        namespace: ns,
        name: 'from-broken-bootstrap',
      }),
    ).rejects.toThrow();

    // A Completed backup whose load failed: not Ready either, and the way to try again is named.
    await createBackup('fine');
    const at = new Date().toISOString();
    await setStatus('Backup', 'fine', { phase: 'Completed', startedAt: at, completedAt: at });
    await rdc.apply('from-fine', { replicas: 1, bootstrap: { fromBackup: { name: 'fine' } } });
    await readyWith('from-fine', 'Restoring');
    await setStatus('Restore', 'from-fine-bootstrap', {
      phase: 'Failed',
      error: { reason: 'LoadFailed', message: 'the server refused the RDB' },
    });
    const loadFailed = await readyWith('from-fine', 'RestoreFailed');
    expect(loadFailed.message).toMatch(
      /ended Failed \(LoadFailed: the server refused the RDB\).*delete the Restore/,
    );
    expect((await rdc.get('from-fine')).status).toMatchObject({
      phase: 'Failed',
      bootstrap: { failed: true },
    });
    // And it stays so: not Ready a while later.
    await sleep(3000);
    expect((await ready('from-fine'))?.reason).toBe('RestoreFailed');
  });
});
