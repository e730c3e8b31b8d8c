import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zRestoreStatus } from '../../shared/api/generated.ts';
import { backups, bedStoreSpec, createS3Credentials } from '../backup/support/backups.ts';
import { restores, startRestoreFunction } from '../restore/support.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { ipOf, redisAt, redisClusters, refusals, startFunction } from '../support/redis.ts';
import { tideway } from './support.ts';

/** The phases a Restore goes through, in order (docs/restore.md). */
const PHASES = ['Pending', 'Verifying', 'SafetyBackup', 'Restoring', 'Completed'];

/**
 * `tideway restore` against the test bed: a 1-instance RedisCluster, the product's functions
 * (watcher, reconcile, health, backup, restore, each as its own ServiceAccount) and the bed's S3
 * server. The data after a restore is the backup's; a refused restore creates nothing.
 */
describe('tideway restore', () => {
  const b = bed();
  let ns = '';
  /** A namespace where nothing runs: objects only. */
  let idle = '';
  const workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const rs = restores(b, () => ns);
  const run = (...args: string[]) => tideway({ KUBECONFIG: b.info.kubeconfig }, ...args);

  /** Runs Redis commands on the cluster's master. */
  const onMaster = async <T>(f: (c: Awaited<ReturnType<typeof redisAt>>) => Promise<T>) => {
    const rc = await rdc.get('cache');
    const master = (await rdc.pods('cache')).find((p) => p.metadata?.name === rc.status?.master);
    const c = await redisAt(ipOf(master), await rdc.password('cache'));
    try {
      return await f(c);
    } finally {
      c.close();
    }
  };
  const marker = () => onMaster(async (c) => c.command('GET', 'marker'));
  const backupNow = async (name: string) => {
    await bk.create(name, { cluster: { name: 'cache' } });
    return bk.phase(name, 'Completed');
  };
  const restoreNames = async (namespace: string) =>
    (
      (await b.custom.listNamespacedCustomObject({
        group: 'tideway.dev',
        version: 'v1alpha1',
        plural: 'restores',
        namespace,
      })) as { items: { metadata: { name: string } }[] }
    ).items
      .map((i) => i.metadata.name)
      .sort();

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'cli-restore');
    idle = await createNamespace(b.core, 'cli-restore-idle');
    const id = `cli-restore-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    for (const fn of ['reconcile', 'health', 'backup'])
      workers.push(await startFunction(b, ns, id, fn, { TIDEWAY_REPLICA: '0' }));
    workers.push(await startRestoreFunction(b, ns, id, { TIDEWAY_REPLICA: '0' }));
    await createS3Credentials(b, ns);
    await rdc.apply('cache', {
      version: '7.0',
      replicas: 1,
      backup: { store: bedStoreSpec(b, `e2e/${ns}`) },
    });
    await rdc.ready('cache');
    await onMaster(async (c) => {
      for (let i = 0; i < 500; i++) await c.command('SET', `k${i}`, `v${i}`.repeat(100));
    });
    // A cluster without any Backup, where no function runs (the CLI refuses before one would).
    await redisClusters(b, () => idle).apply('lonely', { version: '7.0', replicas: 1 });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    for (const n of [ns, idle]) await b.core.deleteNamespace({ name: n }).catch(() => undefined);
    expect(refusals(workers)).toEqual([]);
  });

  it('--latest in text: follows the Restore through its phases to Completed; the data is the backup’s again', async () => {
    await onMaster((c) => c.command('SET', 'marker', 'at-b1'));
    await backupNow('b1');
    await onMaster(async (c) => {
      await c.command('SET', 'marker', 'after-b1');
      await c.command('SET', 'added-after-b1', 'x');
    });

    const r = await run('restore', 'cache', '-n', ns, '--latest');
    expect(r.code, r.stderr).toBe(0);
    const name = /^Restore (\S+) Completed$/m.exec(r.stdout)?.[1] ?? '';
    expect(name).toMatch(/^cache-restore-[a-z0-9]{5}$/);
    expect(r.stdout).toContain('source:   backup b1 (latest)');
    expect(r.stdout).toMatch(/keys: +50[0-9]\n/);
    expect(r.stdout).toContain(`safety backup: ${name}-safety`);
    // Progress on stderr, plain lines (not a terminal): the phases in their order, ending Completed.
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(
      `Restore ${ns}/${name} created; following it (Ctrl-C stops following, not the restore)`,
    );
    expect(r.stderr).not.toContain('\r');
    const phases = lines.slice(1).map((l) => l.split(/\s+/)[0] ?? '');
    expect(
      phases.every((p) => PHASES.includes(p)),
      phases.join(' '),
    ).toBe(true);
    const order = phases.map((p) => PHASES.indexOf(p));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    expect(lines.at(-1)).toMatch(/^Completed +\[#+\] 100%/);

    // The data is b1's: the marker as it was then, the key written after it gone.
    expect(await marker()).toBe('at-b1');
    expect(await onMaster((c) => c.command('EXISTS', 'added-after-b1'))).toBe(0);
    const made = await rs.get(name);
    expect(made.spec).toMatchObject({
      cluster: { name: 'cache' },
      source: { latest: true },
      safetyBackup: true,
    });
    expect(made.status?.phase).toBe('Completed');
    expect((await bk.get(`${name}-safety`)).status?.phase).toBe('Completed');
  });

  it('--backup NAME -o json: stdout is the final status as JSON (Completed), nothing drawn', async () => {
    await onMaster((c) => c.command('SET', 'marker', 'at-b2'));
    await backupNow('b2');
    await onMaster((c) => c.command('SET', 'marker', 'after-b2'));

    const r = await run(
      'restore',
      'cache',
      '-n',
      ns,
      '--backup',
      'b2',
      '--name',
      'r2',
      '--no-safety-backup',
      '-o',
      'json',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { name: string };
    expect(out.name).toBe('r2');
    const s = zRestoreStatus.parse(out);
    expect(s).toMatchObject({ phase: 'Completed', source: 'backup b2', progress: { percent: 100 } });
    expect(s.safetyBackup).toBeUndefined();
    // What it printed is the object's status as the API server holds it.
    expect((await rs.get('r2')).status).toMatchObject({
      phase: 'Completed',
      keys: s.keys,
      completedAt: s.completedAt,
    });
    expect(await marker()).toBe('at-b2');
    await expect(bk.get('r2-safety')).rejects.toMatchObject({ code: 404 });
  });

  it('refused: exit 1, one clear line on stderr, nothing on stdout, no Restore created', async () => {
    // A Backup that failed (its cluster does not exist).
    await bk.create('orphan', { cluster: { name: 'nobody' } });
    await bk.phase('orphan', 'Failed');
    const before = await restoreNames(ns);
    const refusedWith = async (args: string[], message: string) => {
      const r = await run('restore', ...args);
      expect(r, args.join(' ')).toMatchObject({ code: 1, stdout: '' });
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toEqual([`tideway: ${message}`]);
    };
    await refusedWith(
      ['cache', '-n', ns, '--backup', 'ghost'],
      `Backup "ghost" in namespace "${ns}" not found`,
    );
    await refusedWith(['ghost', '-n', ns, '--latest'], `RedisCluster "ghost" in namespace "${ns}" not found`);
    await refusedWith(
      ['cache', '-n', ns, '--backup', 'orphan'],
      `Backup "orphan" in namespace "${ns}" is Failed: only a Completed Backup can be restored`,
    );
    await refusedWith(
      ['lonely', '-n', idle, '--latest'],
      `RedisCluster "lonely" in namespace "${idle}" has no Completed Backup for --latest (safety backups of restores do not count: restore one with --backup NAME)`,
    );
    // The API server's own refusal, verbatim.
    await refusedWith(
      ['cache', '-n', ns, '--latest', '--name', 'r2'],
      'the API server refused the Restore: restores.tideway.dev "r2" already exists',
    );
    expect(await restoreNames(ns)).toEqual(before);
    expect(await restoreNames(idle)).toEqual([]);
    // And the data was not touched by any of them.
    expect(await marker()).toBe('at-b2');
  });
});
