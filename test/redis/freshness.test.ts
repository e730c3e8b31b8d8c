import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RedisCluster } from '../../shared/api/generated.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { redisClusters, refusals, startRedisFunctions } from '../support/redis.ts';

type Cond = { type: string; status: string; reason: string; message: string };

/**
 * Issue 12, item 4: spec.backup.maxBackupAge → BackupStale, status.lastBackup kept current by
 * health's ticks. Only the Redis functions run here, so the Backups' status is written by the
 * test as a backup function would, with completion times chosen to cross the target.
 */
describe('backup freshness', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'fresh');
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  /** A Backup of the cluster that finished `agoMs` ago. */
  const completedBackup = async (name: string, cluster: string, agoMs: number) => {
    await b.custom.createNamespacedCustomObject({
      ...TIDEWAY_KINDS.Backup,
      namespace: ns,
      body: {
        apiVersion: 'tideway.dev/v1alpha1',
        kind: 'Backup',
        metadata: { name },
        spec: { cluster: { name: cluster }, deletionPolicy: 'Retain' },
      },
    });
    const at = new Date(Date.now() - agoMs).toISOString();
    await b.custom.patchNamespacedCustomObjectStatus(
      {
        ...TIDEWAY_KINDS.Backup,
        namespace: ns,
        name,
        body: { status: { phase: 'Completed', startedAt: at, completedAt: at } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  const stale = (name: string, status: string, reason: string) =>
    until(
      `${name}: BackupStale=${status} ${reason}`,
      async () => {
        const rc = (await rdc.get(name)) as RedisCluster;
        const c = (rc.status?.conditions as Cond[] | undefined)?.find((c) => c.type === 'BackupStale');
        return c?.status === status && c.reason === reason ? rc : undefined;
      },
      30_000,
      250,
    );

  it('says BackupStale when the newest backup is older than maxBackupAge, and clears it when a new one completes', async () => {
    workers = await startRedisFunctions(b, ns, `fresh-${ns}`, { replicas: { reconcile: 1, health: 1 } });
    await rdc.apply('fresh', { replicas: 1, backup: { maxBackupAge: '1h' } });
    await rdc.ready('fresh');
    // Just created, no backup: it has an hour for its first one.
    await stale('fresh', 'False', 'FirstBackupDue');

    // Older than the target, and newer ones that do not count: another cluster's, a failed one.
    await completedBackup('fresh-old', 'fresh', 2 * 3_600_000);
    await completedBackup('other-new', 'other', 60_000);
    const rc = await stale('fresh', 'True', 'TooOld');
    expect(rc.status?.lastBackup?.name).toBe('fresh-old');

    await completedBackup('fresh-new', 'fresh', 60_000);
    const after = await stale('fresh', 'False', 'Fresh');
    expect(after.status?.lastBackup?.name).toBe('fresh-new');
  });
});
