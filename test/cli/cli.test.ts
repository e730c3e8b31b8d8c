import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zBackupStatus, zRedisClusterStatus } from '../../shared/api/generated.ts';
import { backups, bedStoreSpec, createS3Credentials } from '../backup/support/backups.ts';
import { bed, createNamespace } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import { ipOf, redisAt, redisClusters, refusals, startFunction } from '../support/redis.ts';
import { tideway } from './support.ts';

/**
 * The tideway CLI against the test bed: a 1-instance RedisCluster, the product's functions
 * (watcher, reconcile, health, backup, each as its own ServiceAccount) and the bed's S3 server.
 */
describe('tideway CLI', () => {
  const b = bed();
  let ns = '';
  const workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const { s3 } = b.info;
  const run = (...args: string[]) => tideway({ KUBECONFIG: b.info.kubeconfig }, ...args);

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'cli');
    const id = `cli-${ns}`;
    workers.push(await startFunction(b, ns, id, 'watcher', { TIDEWAY_WATCHER_ID: id }));
    for (const fn of ['reconcile', 'health', 'backup'])
      workers.push(await startFunction(b, ns, id, fn, { TIDEWAY_REPLICA: '0' }));
    await createS3Credentials(b, ns);
    await rdc.apply('cache', {
      version: '7.0',
      replicas: 1,
      backup: { store: bedStoreSpec(b, `e2e/${ns}`) },
    });
    const rc = await rdc.ready('cache');
    const master = (await rdc.pods('cache')).find((p) => p.metadata?.name === rc.status?.master);
    const c = await redisAt(ipOf(master), await rdc.password('cache'));
    try {
      for (let i = 0; i < 200; i++) await c.command('SET', `k${i}`, `v${i}`.repeat(50));
    } finally {
      c.close();
    }
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    expect(refusals(workers)).toEqual([]);
  });

  it('status: phase Ready, master, ready/desired, version, conditions; -o json is the status', async () => {
    const text = await run('status', 'cache', '-n', ns);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toContain(`Cluster:     ${ns}/cache`);
    expect(text.stdout).toContain('Phase:       Ready');
    expect(text.stdout).toContain('Master:      cache-0');
    expect(text.stdout).toContain('Ready:       1/1');
    expect(text.stdout).toMatch(/Version: {5}7\.0\.\d+/);
    expect(text.stdout).toMatch(/\n {2}Ready +True /);
    const json = await run('status', 'cache', '-n', ns, '-o', 'json');
    expect(json.code).toBe(0);
    expect(zRedisClusterStatus.parse(JSON.parse(json.stdout))).toMatchObject({
      phase: 'Ready',
      master: 'cache-0',
      readyReplicas: 1,
    });
  });

  it('backup now -o json: creates a Backup, follows it to Completed, prints its status as JSON', async () => {
    const r = await run('backup', 'now', 'cache', '-n', ns, '--name', 'b1', '-o', 'json');
    expect(r.code).toBe(0);
    // No progress bar in JSON mode: stdout is one JSON document, stderr is empty.
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { name: string };
    expect(out.name).toBe('b1');
    const s = zBackupStatus.parse(out);
    expect(s).toMatchObject({ phase: 'Completed', progress: { percent: 100 } });
    expect(s.location).toMatch(new RegExp(`^s3://${s3.bucket}/e2e/${ns}/`));
    // What it printed is the object's status as the API server holds it.
    const obj = await bk.get('b1');
    expect(obj.spec.cluster.name).toBe('cache');
    expect(obj.status).toMatchObject({
      phase: 'Completed',
      location: s.location,
      size: s.size,
      sha256: s.sha256,
    });
  });

  it('backup now in text: a generated name, progress lines, the outcome with location, size, duration', async () => {
    const r = await run('backup', 'now', 'cache', '-n', ns);
    expect(r.code).toBe(0);
    const name = /Backup (\S+) Completed/.exec(r.stdout)?.[1] ?? '';
    expect(name).toMatch(/^cache-[a-z0-9]{5}$/);
    expect(r.stdout).toMatch(/location: s3:\/\//);
    expect(r.stdout).toMatch(/size: +\d/);
    expect(r.stdout).toMatch(/duration: \d/);
    // Not a terminal: plain lines, no carriage returns; the last one is the end.
    expect(r.stderr).toContain(`Backup ${ns}/${name} created`);
    expect(r.stderr).not.toContain('\r');
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^Completed +\[#+\] 100%/);
    expect((await bk.get(name)).status?.phase).toBe('Completed');
  });

  it('errors: an unknown cluster, a refused create (verbatim), a missing kubeconfig', async () => {
    const ghost = await run('backup', 'now', 'ghost', '-n', ns);
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain(`RedisCluster "ghost" in namespace "${ns}" not found`);
    expect(ghost.stdout).toBe('');
    // Nothing was created for it.
    const list = (await b.custom.listNamespacedCustomObject({
      group: 'tideway.dev',
      version: 'v1alpha1',
      plural: 'backups',
      namespace: ns,
    })) as { items: { spec: { cluster: { name: string } } }[] };
    expect(list.items.filter((i) => i.spec.cluster.name === 'ghost')).toEqual([]);

    const again = await run('backup', 'now', 'cache', '-n', ns, '--name', 'b1');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      'the API server refused the Backup: backups.tideway.dev "b1" already exists',
    );

    const nokube = await tideway({ KUBECONFIG: '/nonexistent/kubeconfig' }, 'status', 'cache', '-n', ns);
    expect(nokube.code).toBe(1);
    expect(nokube.stderr).toContain('no kubeconfig: KUBECONFIG names /nonexistent/kubeconfig');

    const usage = await run('restore', 'cache', '-n', ns);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('exactly one of --backup NAME or --latest');
  });
});
