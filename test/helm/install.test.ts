import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { helm, helmOrThrow } from '../../infra/helm/local/helm.ts';
import { type ChartOnTestbed, installChartOnTestbed } from '../../infra/helm/local/install.ts';
import { loadServerless } from '../../shared/runtime/config.ts';
import { backups, bedStoreSpec, createS3Credentials } from '../backup/support/backups.ts';
import { restores } from '../restore/support.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { ipOf, redisAt, redisClusters } from '../support/redis.ts';

const ROOT = join(CHART_DIR, '..', '..', '..');
const RELEASE = 'tideway';
const log = (m: string) => process.stderr.write(`${m}\n`);
const functions = Object.keys((await loadServerless(join(ROOT, 'serverless.yml'))).functions);
const SERVICES = ['watcher', 'webhook']; // not scaled by KEDA
const KEDA = { pollingInterval: 1, cooldownPeriod: 8, initialCooldownPeriod: 5 };

/**
 * Issue 14's acceptance: Tideway installed with its chart runs as pods from its own image on the
 * test bed's node, and does its work from there — a cluster, a backup, a restore — with KEDA
 * scaling the event functions from zero; it survives its own absence, a `helm upgrade` that rolls
 * every function, and leaves the data behind at `helm uninstall`.
 */
describe('Tideway installed with its Helm chart', () => {
  const b = bed();
  let ns = '';
  let chart: ChartOnTestbed | undefined;
  let uninstalled = false;
  const rdc = redisClusters(b, () => ns);
  const bk = backups(b, () => ns);
  const rs = restores(b, () => ns);
  const deploymentOf = (fn: string) => `tideway-${fn}-ns-${ns}`;
  const functionPods = async (): Promise<V1Pod[]> =>
    (
      await b.core.listNamespacedPod({
        namespace: ns,
        labelSelector: `app.kubernetes.io/instance=${RELEASE}`,
      })
    ).items;
  const deployment = (fn: string): Promise<V1Deployment> =>
    b.apps.readNamespacedDeployment({ namespace: ns, name: deploymentOf(fn) });
  const replicasOf = async (fn: string) => (await deployment(fn)).spec?.replicas ?? -1;
  const atReplicas = (fn: string, n: number) => async () => ((await replicasOf(fn)) === n ? true : undefined);
  const master = async () => {
    const rc = await rdc.get('cache');
    const pod = (await rdc.pods('cache')).find((p) => p.metadata?.name === rc.status?.master);
    return redisAt(ipOf(pod), await rdc.password('cache'));
  };
  const kedaOutput = () => `\nKEDA:\n${chart?.keda?.output().slice(-4000) ?? ''}`;

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'chart');
    await createS3Credentials(b, ns);
    chart = await installChartOnTestbed({
      info: b.info,
      root: ROOT,
      release: RELEASE,
      namespace: ns,
      watchNamespaces: [ns],
      keda: KEDA,
      // One pod each: two cores run the whole test bed.
      values: Object.fromEntries(functions.map((fn) => [`functions.${fn}.replicas`, '1'])),
      // The suite's other files set up Tideway with installTideway, whose ClusterRoles have the
      // chart's names and rules: the release adopts them (afterAll puts them back after uninstall).
      takeOwnership: true,
      log,
    });
  }, 20 * 60_000);

  afterAll(async () => {
    if (!uninstalled) await helm(['uninstall', RELEASE, '-n', ns, '--wait'], b.info.kubeconfig);
    await chart?.stop();
    // No operator is left to finalize what the test made: let the namespace go.
    for (const [kind, names] of [
      ['redisclusters', ['cache']],
      ['backups', ['b1', 'b2', 'r1-safety', 'during-1', 'during-2', 'during-3']],
    ] as const)
      for (const name of names)
        await b
          .kubectl('patch', kind, name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}')
          .catch(() => undefined);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
    await installCrds(b.info);
  });

  it("runs every function as a pod from Tideway's image, as the function's own ServiceAccount", async () => {
    const pods = (await functionPods()).filter((p) => p.status?.phase === 'Running');
    const byFunction = new Map(pods.map((p) => [p.metadata?.labels?.['app.kubernetes.io/component'], p]));
    // The event functions may already be at zero (KEDA); the watcher and the webhook are not.
    for (const fn of SERVICES) expect(byFunction.has(fn), fn).toBe(true);
    for (const p of pods) {
      const fn = p.metadata?.labels?.['app.kubernetes.io/component'] ?? '';
      expect(p.spec?.serviceAccountName).toBe(deploymentOf(fn));
      expect(p.status?.containerStatuses?.[0]?.imageID).toMatch(/^localhost\/tideway@sha256:[0-9a-f]{64}$/);
      expect(p.status?.containerStatuses?.[0]?.ready, fn).toBe(true);
    }
    expect(
      new Set((await b.apps.listNamespacedDeployment({ namespace: ns })).items.map((d) => d.metadata?.name)),
    ).toEqual(new Set(functions.map(deploymentOf)));
  });

  it('makes a RedisCluster applied with kubectl Ready, from the pods', async () => {
    await rdc.apply('cache', {
      version: '7.0',
      replicas: 2,
      backup: { store: bedStoreSpec(b, `chart/${ns}`) },
    });
    await rdc.ready('cache', 240_000);
    const c = await master();
    expect(await c.command('SET', 'greeting', 'from the backup')).toBe('OK');
    c.close();
  });

  it('takes a backup with the backup function scaled from zero by KEDA, and back to zero after', async () => {
    await until('backup at 0 replicas', atReplicas('backup', 0), 120_000).catch((error: unknown) => {
      throw new Error(`${String(error)}${kedaOutput()}`);
    });
    await bk.create('b1', { cluster: { name: 'cache' } });
    await until('backup at 1 replica', atReplicas('backup', 1), 60_000);
    const done = await bk.phase('b1', 'Completed', 180_000);
    expect(done.status?.location).toMatch(new RegExp(`^s3://${b.info.s3.bucket}/chart/${ns}/`));
    await until('backup back at 0 replicas', atReplicas('backup', 0), 120_000);
  });

  it('restores that backup through the restore function, a pod whose address the master connects to', async () => {
    const c = await master();
    await c.command('SET', 'greeting', 'changed after the backup');
    c.close();
    await rs.create('r1', { cluster: { name: 'cache' }, source: { backup: { name: 'b1' } } });
    const r1 = await rs.ended('r1', 'Completed', 300_000);
    expect(r1.status?.safetyBackup).toBe('r1-safety');
    const after = await master();
    expect(await after.command('GET', 'greeting')).toBe('from the backup');
    after.close();
  });

  it('leaves Redis serving while every function is gone, and reconciles what changed meanwhile', async () => {
    // The watcher killed outright, then nothing of Tideway left: KEDA paused at zero, the
    // watcher and the webhook scaled to zero.
    const watcher = (await functionPods()).find(
      (p) => p.metadata?.labels?.['app.kubernetes.io/component'] === 'watcher',
    );
    await b.faults.killContainer(ns, watcher?.metadata?.name ?? '');
    for (const fn of functions.filter((f) => !SERVICES.includes(f)))
      await b.kubectl(
        'annotate',
        'scaledobject',
        deploymentOf(fn),
        '-n',
        ns,
        'autoscaling.keda.sh/paused-replicas=0',
      );
    for (const fn of SERVICES)
      await b.kubectl('scale', 'deployment', deploymentOf(fn), '-n', ns, '--replicas=0');
    await until(
      'no function pod',
      async () => ((await functionPods()).length === 0 ? true : undefined),
      120_000,
    );

    const c = await master();
    expect(await c.command('SET', 'while-away', 'kept')).toBe('OK');
    expect(await c.command('GET', 'greeting')).toBe('from the backup');
    c.close();
    // A change nobody is there to act on.
    await rdc.apply('cache', {
      version: '7.0',
      replicas: 3,
      backup: { store: bedStoreSpec(b, `chart/${ns}`) },
    });
    expect((await rdc.pods('cache')).length).toBe(2);

    for (const fn of SERVICES)
      await b.kubectl('scale', 'deployment', deploymentOf(fn), '-n', ns, '--replicas=1');
    for (const fn of functions.filter((f) => !SERVICES.includes(f)))
      await b.kubectl(
        'annotate',
        'scaledobject',
        deploymentOf(fn),
        '-n',
        ns,
        'autoscaling.keda.sh/paused-replicas-',
      );
    const rc = await rdc.ready('cache', 300_000);
    expect(rc.status?.readyReplicas).toBe(3);
    const again = await master();
    expect(await again.command('GET', 'while-away')).toBe('kept');
    again.close();
  });

  it('rolls every function to a changed image reference at helm upgrade, losing no event', async () => {
    const imageId = (await functionPods())
      .flatMap((p) => p.status?.containerStatuses ?? [])
      .map((s) => s.imageID ?? '')
      .find((id) => id.startsWith('localhost/tideway@'));
    const digest = imageId?.split('@')[1] ?? '';
    expect(digest).toMatch(/^sha256:/);
    const upgrade = helmOrThrow(
      [
        ...['upgrade', RELEASE, CHART_DIR, '-n', ns, '--reuse-values', '--set', `image.digest=${digest}`],
        ...['--wait', '--timeout', '10m'],
      ],
      b.info.kubeconfig,
    );
    // Events while the functions roll: each must be handled by an old pod or a new one.
    for (let i = 1; i <= 3; i++) await bk.create(`during-${i}`, { cluster: { name: 'cache' } });
    await upgrade;
    for (const fn of functions) {
      const d = await deployment(fn);
      expect(d.spec?.template.spec?.containers[0]?.image).toBe(`localhost/tideway@${digest}`);
    }
    for (let i = 1; i <= 3; i++) await bk.phase(`during-${i}`, 'Completed', 300_000);
  });

  it('leaves the Redis clusters, their data and the CRDs in place at helm uninstall', async () => {
    const out = await helmOrThrow(['uninstall', RELEASE, '-n', ns, '--wait'], b.info.kubeconfig);
    uninstalled = true;
    expect(out).toContain(`release "${RELEASE}" uninstalled`);
    await until(
      'no function pod',
      async () => ((await functionPods()).length === 0 ? true : undefined),
      120_000,
    );
    expect((await b.apps.listNamespacedDeployment({ namespace: ns })).items).toEqual([]);
    expect((await rdc.get('cache')).metadata.deletionTimestamp).toBeUndefined();
    expect((await rdc.pods('cache')).length).toBe(3);
    const c = await master();
    expect(await c.command('GET', 'while-away')).toBe('kept');
    c.close();
    const crds = await promisify(execFile)(b.info.kubectl, ['get', 'crd', '-o', 'name'], {
      env: { ...process.env, KUBECONFIG: b.info.kubeconfig },
    });
    expect(crds.stdout).toContain('redisclusters.tideway.dev');
    expect(crds.stdout).toContain('backups.tideway.dev');
  });
});
