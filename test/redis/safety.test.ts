import { PatchStrategy, PolicyV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseReplication } from '../../shared/redis/info.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { logsOnFailure, type Worker } from '../support/functions.ts';
import {
  eventReasons,
  ipOf,
  missingKeys,
  redisAt,
  redisClusters,
  refusals,
  startFunction,
  startRedisFunctions,
} from '../support/redis.ts';

type Cond = { type: string; status: string; reason: string; message: string };

/**
 * Issue 11: the paths where Tideway itself could destroy data — promoting a replica that lacks
 * it, reconcile promoting on its own, a stalled function acting on a stale decision, taking over
 * (and later deleting) an object that is not Tideway's. Each test fails on the code before the fix.
 */
describe('redis safety', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const condition = async (name: string, type: string) =>
    ((await rdc.get(name)).status?.conditions as Cond[] | undefined)?.find((c) => c.type === type);
  const role = async (ip: string, pw: string) => {
    const c = await redisAt(ip, pw);
    try {
      return parseReplication(String(await c.command('INFO', 'replication'))).role;
    } finally {
      c.close();
    }
  };
  const podIp = async (name: string, pod: string) =>
    ipOf((await rdc.pods(name)).find((p) => p.metadata?.name === pod));
  /** Keys written on the master and saved to disk on every instance (they survive a SIGKILL). */
  const writeAndSave = async (name: string, pw: string, prefix: string, n: number) => {
    const rc = await rdc.get(name);
    const keys = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    const m = await redisAt(await podIp(name, rc.status?.master ?? ''), pw);
    try {
      for (const k of keys) await m.command('SET', k, k);
      expect(Number(await m.command('WAIT', (rc.spec.replicas ?? 3) - 1, 5000))).toBe(
        (rc.spec.replicas ?? 3) - 1,
      );
    } finally {
      m.close();
    }
    // Replicas first: the master (whose offset only grows, pings included) is never behind them.
    const pods = (await rdc.pods(name)).sort((x) => (x.metadata?.name === rc.status?.master ? 1 : -1));
    for (const p of pods) {
      const c = await redisAt(ipOf(p), pw);
      try {
        await c.command('SAVE');
      } finally {
        c.close();
      }
    }
    return keys;
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis-safety');
  });

  // afterEach runs before onTestFailed: the failed test's workers are kept for it.
  let stopped: Worker[] = [];
  logsOnFailure(() => stopped);

  afterEach(async () => {
    stopped = workers;
    workers = [];
    await Promise.all(stopped.map((w) => w.stop()));
    expect(refusals(stopped)).toEqual([]);
  });

  afterAll(async () => {
    await b.faults.component('kube-controller-manager', 'start').catch(() => undefined);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('never promotes a replica that never synced: no master (NoSafeCandidate) until the data is back, then every key is there', async () => {
    workers = await startRedisFunctions(b, ns, 'safety-empty');
    await rdc.apply('empty', { version: '7.0', replicas: 2, failover: { after: '3s' } });
    await rdc.ready('empty');
    const pw = await rdc.password('empty');
    const keys = await writeAndSave('empty', pw, 'k', 200);

    // The replica that holds the data goes away, then the master; a scale-up meanwhile adds an
    // instance that can never sync (its master is gone). It is the only replica that answers.
    await b.faults.holdDownPod(ns, 'empty-1');
    await b.faults.holdDownPod(ns, 'empty-0');
    await rdc.apply('empty', { version: '7.0', replicas: 3, failover: { after: '3s' } });
    await until(
      'empty-2 answering',
      async () => {
        const ip = await podIp('empty', 'empty-2');
        return ip && (await role(ip, pw).catch(() => undefined)) ? true : undefined;
      },
      60_000,
      250,
    );
    const refused = await until(
      'Healthy=False NoSafeCandidate',
      async () => {
        const c = await condition('empty', 'Healthy');
        return c?.reason === 'NoSafeCandidate' && c.message.includes('empty-2') ? c : undefined;
      },
      30_000,
      250,
    );
    expect(refused.status).toBe('False');
    // Well past failover.after: still no promotion.
    await sleep(6000);
    expect((await rdc.get('empty')).status?.master).toBe('empty-0');
    expect(await role(await podIp('empty', 'empty-2'), pw)).toBe('replica');

    await b.faults.releasePod(ns, 'empty-0');
    await b.faults.releasePod(ns, 'empty-1');
    const rc = await rdc.ready('empty', 60_000).catch(async (error: unknown) => {
      process.stdout.write(
        `[safety] status on failure ${JSON.stringify((await rdc.get('empty')).status, null, 1)}\n`,
      );
      for (const w of workers)
        process.stdout.write(`[safety] function log tail ${w.output().slice(-3000)}\n`);
      throw error;
    });
    expect(rc.status?.master).toBe('empty-0');
    for (const p of await rdc.pods('empty'))
      expect(await missingKeys(ipOf(p), pw, keys), `${p.metadata?.name} lost keys`).toEqual([]);
  });

  it("never promotes when the recorded master's pod is gone: not before failover.after, not with failover disabled", async () => {
    workers = await startRedisFunctions(b, ns, 'safety-absent');
    await rdc.apply('absent', { version: '7.0', replicas: 3, failover: { enabled: false, after: '3s' } });
    await rdc.ready('absent');
    // Without the controller-manager, a deleted pod stays deleted: the master's pod is absent.
    await b.faults.component('kube-controller-manager', 'stop');
    try {
      const lostAt = Date.now();
      await b.core.deleteNamespacedPod({ namespace: ns, name: 'absent-0', gracePeriodSeconds: 0 });
      await until(
        'absent-0 gone',
        async () =>
          (await rdc.pods('absent')).some((p) => p.metadata?.name === 'absent-0') ? undefined : true,
        30_000,
        200,
      );
      await sleep(8000);
      let rc = await rdc.get('absent');
      expect(rc.status?.master).toBe('absent-0');
      expect(rc.status?.failover?.count ?? 0).toBe(0);
      expect((await condition('absent', 'Healthy'))?.message).toContain('automatic failover is disabled');

      // Enabled, with failover.after 30 s counted from when the master was lost: nothing before.
      await rdc.apply('absent', { version: '7.0', replicas: 3, failover: { enabled: true, after: '30s' } });
      await sleep(Math.max(0, lostAt + 24_000 - Date.now()));
      expect((await rdc.get('absent')).status?.master).toBe('absent-0');
      rc = await until(
        'failover after failover.after',
        async () => {
          const r = await rdc.get('absent');
          return r.status?.master && r.status.master !== 'absent-0' ? r : undefined;
        },
        60_000,
        250,
      );
      expect(rc.status?.failover?.last).toMatchObject({ from: 'absent-0', reason: 'MasterUnreachable' });
      expect(Date.parse(rc.status?.failover?.last?.at ?? '')).toBeGreaterThanOrEqual(lostAt + 29_000);
    } finally {
      await b.faults.component('kube-controller-manager', 'start');
    }
    await rdc.ready('absent');
  });

  it('does not fail over while a restore says it is loading the master, and does once that ends', async () => {
    workers = await startRedisFunctions(b, ns, 'safety-restoring', { replicas: { reconcile: 1, health: 1 } });
    await rdc.apply('busy', { version: '7.0', replicas: 2, failover: { after: '3s' } });
    const rc0 = await rdc.ready('busy');
    const master = rc0.status?.master ?? '';
    const setRestoring = async (status: 'True' | 'False') => {
      const conditions = ((await rdc.get('busy')).status?.conditions ?? []).filter(
        (c) => c.type !== 'Restoring',
      );
      await b.custom.patchNamespacedCustomObjectStatus(
        {
          group: 'tideway.dev',
          version: 'v1alpha1',
          plural: 'redisclusters',
          namespace: ns,
          name: 'busy',
          body: {
            status: {
              conditions: [
                ...conditions,
                {
                  type: 'Restoring',
                  status,
                  reason: status === 'True' ? 'Restoring' : 'Restored',
                  message: 'Restore test loads a backup',
                  lastTransitionTime: new Date().toISOString(),
                },
              ],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    };
    // As the restore function marks the cluster while the master follows its feed.
    await setRestoring('True');
    await b.faults.holdDownPod(ns, master);
    try {
      await until(
        'Healthy=False Restoring',
        async () => ((await condition('busy', 'Healthy'))?.reason === 'Restoring' ? true : undefined),
        30_000,
        250,
      );
      await sleep(6000); // twice failover.after
      expect((await rdc.get('busy')).status?.master).toBe(master);
      await setRestoring('False');
      const rc = await until(
        'failover once the restore ended',
        async () => {
          const r = await rdc.get('busy');
          return r.status?.master && r.status.master !== master ? r : undefined;
        },
        60_000,
        250,
      );
      expect(rc.status?.failover?.last).toMatchObject({ from: master });
    } finally {
      await b.faults.releasePod(ns, master);
    }
    await rdc.ready('busy');
  });

  it('a health function stalled past its lease neither records nor promotes after another replica took the lock', async () => {
    // One health replica that stalls (its whole process) just before its first failover step.
    workers = await startRedisFunctions(b, ns, 'safety-stall', {
      replicas: { reconcile: 1, health: 1 },
      env: { health: { TIDEWAY_FAILPOINTS: 'failover.before-unlabel=stall:22000' } },
    });
    await rdc.apply('stall', { version: '7.0', replicas: 3, failover: { after: '3s' } });
    await rdc.ready('stall');
    const pw = await rdc.password('stall');
    await b.faults.holdDownPod(ns, 'stall-0');
    await until(
      'the health replica stalled in its failover',
      async () => (workers.some((w) => w.output().includes('failpoint: stalling')) ? true : undefined),
      30_000,
      200,
    );
    const stalledAt = Date.now();
    // Meanwhile the owner turns failover off, and another health replica takes over the cluster.
    await rdc.apply('stall', { version: '7.0', replicas: 3, failover: { enabled: false, after: '3s' } });
    workers.push(await startFunction(b, ns, 'safety-stall', 'health', { TIDEWAY_REPLICA: '9' }));
    await until(
      'the other health replica took the lock and reported failover disabled',
      async () =>
        (await condition('stall', 'Healthy'))?.message.includes('automatic failover is disabled')
          ? true
          : undefined,
      40_000,
      250,
    );
    // The stalled one wakes up (22 s) well after its lease (15 s) ran out.
    await sleep(Math.max(0, stalledAt + 26_000 - Date.now()));
    const rc = await rdc.get('stall');
    expect(rc.status?.master).toBe('stall-0');
    expect(rc.status?.failover?.count ?? 0).toBe(0);
    for (const pod of ['stall-1', 'stall-2'])
      expect(await role(await podIp('stall', pod), pw)).toBe('replica');
    expect(await eventReasons(b, ns, 'stall')).not.toContain('Failover');
    // ...and labelled nothing: no replica is behind the master Service.
    const labelled = (await rdc.pods('stall')).filter(
      (p) => p.metadata?.labels?.['tideway.dev/role'] === 'master',
    );
    expect(labelled.map((p) => p.metadata?.name).filter((n) => n !== 'stall-0')).toEqual([]);
    // Failover on again: the replica that holds the lock now does what the stalled one could not.
    // (Released first, stall-0 would come back from its append-only file with a fresh replication
    // id at offset 0 — behind replicas whose offsets Redis's pings moved on, when the cluster ran
    // past its first 10 s ping — and stay out of service while failover is off, as designed.)
    await rdc.apply('stall', { version: '7.0', replicas: 3, failover: { after: '3s' } });
    const after = await until(
      'the lock holder failed over once failover was enabled',
      async () => {
        const r = await rdc.get('stall');
        return r.status?.master && r.status.master !== 'stall-0' ? r : undefined;
      },
      40_000,
      250,
    );
    expect(after.status?.failover?.count).toBe(1);
    await b.faults.releasePod(ns, 'stall-0');
    await rdc.ready('stall');
  });

  it('refuses a name taken by a foreign Service or StatefulSet, changes nothing, and leaves it when deleted', async () => {
    workers = await startRedisFunctions(b, ns, 'safety-foreign', { replicas: { reconcile: 1, health: 1 } });
    await b.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'svc-clash', labels: { team: 'payments' } },
        spec: { selector: { app: 'payments' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    await b.apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'sts-clash' },
        spec: {
          replicas: 0,
          serviceName: 'sts-clash',
          selector: { matchLabels: { app: 'sts-clash' } },
          template: {
            metadata: { labels: { app: 'sts-clash' } },
            spec: { containers: [{ name: 'c', image: 'redis:7.0' }] },
          },
        },
      },
    });
    // Someone's Secret named like the password Secret Tideway would generate for 'sec-clash'.
    await b.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'sec-clash-auth' }, stringData: { password: 'not-yours' } },
    });
    const svcBefore = await b.core.readNamespacedService({ namespace: ns, name: 'svc-clash' });
    const stsBefore = await b.apps.readNamespacedStatefulSet({ namespace: ns, name: 'sts-clash' });

    for (const [name, kind, taken] of [
      ['svc-clash', 'Service', 'svc-clash'],
      ['sts-clash', 'StatefulSet', 'sts-clash'],
      ['sec-clash', 'Secret', 'sec-clash-auth'],
    ] as const) {
      await rdc.apply(name, { version: '7.0', replicas: 1 });
      const c = await until(
        `${name}: Reconciled=False OwnershipConflict`,
        async () => {
          const r = await condition(name, 'Reconciled');
          return r?.reason === 'OwnershipConflict' ? r : undefined;
        },
        30_000,
        250,
      );
      expect(c.status).toBe('False');
      expect(c.message).toContain(`${kind} ${taken} already exists and is not managed by this cluster`);
    }
    // Nothing of the foreign objects changed, and no pod started for either cluster.
    const svcAfter = await b.core.readNamespacedService({ namespace: ns, name: 'svc-clash' });
    const stsAfter = await b.apps.readNamespacedStatefulSet({ namespace: ns, name: 'sts-clash' });
    expect(svcAfter.metadata?.resourceVersion).toBe(svcBefore.metadata?.resourceVersion);
    expect(stsAfter.metadata?.resourceVersion).toBe(stsBefore.metadata?.resourceVersion);
    for (const name of ['svc-clash', 'sts-clash', 'sec-clash']) expect(await rdc.pods(name)).toEqual([]);
    // The foreign password was never used: nothing was made from it.
    await expect(
      b.core.readNamespacedSecret({ namespace: ns, name: 'sec-clash-auth-conf' }),
    ).rejects.toThrow();

    for (const name of ['svc-clash', 'sts-clash', 'sec-clash'])
      await b.custom.deleteNamespacedCustomObject({
        group: 'tideway.dev',
        version: 'v1alpha1',
        plural: 'redisclusters',
        namespace: ns,
        name,
      });
    await until(
      'both clusters gone',
      async () => {
        const list = (await b.custom.listNamespacedCustomObject({
          group: 'tideway.dev',
          version: 'v1alpha1',
          plural: 'redisclusters',
          namespace: ns,
        })) as { items: { metadata: { name: string } }[] };
        return list.items.some((i) => i.metadata.name.endsWith('-clash')) ? undefined : true;
      },
      60_000,
      250,
    );
    const svcLast = await b.core.readNamespacedService({ namespace: ns, name: 'svc-clash' });
    const stsLast = await b.apps.readNamespacedStatefulSet({ namespace: ns, name: 'sts-clash' });
    expect(svcLast.metadata?.uid).toBe(svcBefore.metadata?.uid);
    expect(stsLast.metadata?.uid).toBe(stsBefore.metadata?.uid);
    expect(stsLast.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('refuses a name taken by a foreign ConfigMap or PodDisruptionBudget, changes nothing, and leaves it when deleted', async () => {
    workers = await startRedisFunctions(b, ns, 'safety-foreign-cm', {
      replicas: { reconcile: 1, health: 1 },
    });
    const policy = b.kc.makeApiClient(PolicyV1Api);
    // The ConfigMap's name is fixed (<cluster>-config; only its keys are named by content), the
    // PDB's is the cluster's own.
    await b.core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: 'cm-clash-config', labels: { team: 'payments' } },
        data: { 'app.conf': 'x=1' },
      },
    });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'pdb-clash' },
        spec: { minAvailable: 2, selector: { matchLabels: { app: 'payments' } } },
      },
    });
    // The disruption controller writes the PDB's status once: only then is its resourceVersion
    // one that nobody but Tideway could move.
    const pdbBefore = await until(
      'the foreign PDB observed by its controller',
      async () => {
        const p = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'pdb-clash' });
        return p.status?.observedGeneration === p.metadata?.generation ? p : undefined;
      },
      30_000,
      250,
    );
    const cmBefore = await b.core.readNamespacedConfigMap({ namespace: ns, name: 'cm-clash-config' });

    for (const [name, kind, taken] of [
      ['cm-clash', 'ConfigMap', 'cm-clash-config'],
      ['pdb-clash', 'PodDisruptionBudget', 'pdb-clash'],
    ] as const) {
      await rdc.apply(name, { version: '7.0', replicas: 1 });
      const c = await until(
        `${name}: Reconciled=False OwnershipConflict`,
        async () => {
          const r = await condition(name, 'Reconciled');
          return r?.reason === 'OwnershipConflict' ? r : undefined;
        },
        30_000,
        250,
      );
      expect(c.status).toBe('False');
      expect(c.message).toContain(`${kind} ${taken} already exists and is not managed by this cluster`);
    }
    // Nothing of the foreign objects changed, and no pod started for either cluster.
    const cmAfter = await b.core.readNamespacedConfigMap({ namespace: ns, name: 'cm-clash-config' });
    const pdbAfter = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'pdb-clash' });
    expect(cmAfter.metadata?.resourceVersion).toBe(cmBefore.metadata?.resourceVersion);
    expect(pdbAfter.metadata?.resourceVersion).toBe(pdbBefore.metadata?.resourceVersion);
    expect(cmAfter.data).toEqual({ 'app.conf': 'x=1' });
    expect(pdbAfter.spec).toEqual(pdbBefore.spec);
    for (const name of ['cm-clash', 'pdb-clash']) expect(await rdc.pods(name)).toEqual([]);

    for (const name of ['cm-clash', 'pdb-clash'])
      await b.custom.deleteNamespacedCustomObject({
        group: 'tideway.dev',
        version: 'v1alpha1',
        plural: 'redisclusters',
        namespace: ns,
        name,
      });
    await until(
      'both clusters gone',
      async () => {
        const list = (await b.custom.listNamespacedCustomObject({
          group: 'tideway.dev',
          version: 'v1alpha1',
          plural: 'redisclusters',
          namespace: ns,
        })) as { items: { metadata: { name: string } }[] };
        return list.items.some((i) => ['cm-clash', 'pdb-clash'].includes(i.metadata.name)) ? undefined : true;
      },
      60_000,
      250,
    );
    // What the clusters did own (the generated password Secrets) the garbage collector removes:
    // once it has, it has passed over the foreign objects too.
    await until(
      "the clusters' own Secrets collected",
      async () => {
        const names = (await b.core.listNamespacedSecret({ namespace: ns })).items.map(
          (x) => x.metadata?.name,
        );
        return names.includes('cm-clash-auth') || names.includes('pdb-clash-auth') ? undefined : true;
      },
      60_000,
      250,
    );
    const cmLast = await b.core.readNamespacedConfigMap({ namespace: ns, name: 'cm-clash-config' });
    const pdbLast = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'pdb-clash' });
    expect(cmLast.metadata?.uid).toBe(cmBefore.metadata?.uid);
    expect(pdbLast.metadata?.uid).toBe(pdbBefore.metadata?.uid);
    expect(cmLast.metadata?.resourceVersion).toBe(cmBefore.metadata?.resourceVersion);
    expect(pdbLast.metadata?.resourceVersion).toBe(pdbBefore.metadata?.resourceVersion);
    expect(cmLast.metadata?.deletionTimestamp).toBeUndefined();
    expect(pdbLast.metadata?.deletionTimestamp).toBeUndefined();
  });

  it("reports a foreign pod that carries the cluster's labels, and neither uses nor touches it", async () => {
    workers = await startRedisFunctions(b, ns, 'safety-stranger', { replicas: { reconcile: 1, health: 1 } });
    await rdc.apply('stranger', { version: '7.0', replicas: 1 });
    await rdc.ready('stranger');
    // Someone's pods with the labels the cluster's Services select, the master's role included.
    // Under another controller: an orphan with the StatefulSet's labels would be adopted (and,
    // beyond its size, deleted) by the StatefulSet controller itself.
    const labels = {
      'app.kubernetes.io/name': 'redis',
      'app.kubernetes.io/instance': 'stranger',
      'app.kubernetes.io/managed-by': 'tideway',
      'tideway.dev/role': 'master',
    };
    await b.apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'impostor' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'redis', image: 'redis:7.0' }] } },
        },
      },
    });
    const impostor = await until(
      'the impostor pod',
      async () =>
        (
          await b.core.listNamespacedPod({
            namespace: ns,
            labelSelector: 'app.kubernetes.io/instance=stranger',
          })
        ).items
          .map((p) => p.metadata?.name ?? '')
          .find((n) => n.startsWith('impostor-')),
      30_000,
      250,
    );
    const c = await until(
      'Reconciled=False ForeignPods',
      async () => {
        const r = await condition('stranger', 'Reconciled');
        return r?.reason === 'ForeignPods' ? r : undefined;
      },
      30_000,
      250,
    );
    expect(c.status).toBe('False');
    expect(c.message).toContain(impostor);
    const rc = await rdc.get('stranger');
    expect(rc.status?.master).toBe('stranger-0');
    expect((rc.status?.nodes ?? []).map((n) => n.pod)).toEqual(['stranger-0']);
    const pod = await b.core.readNamespacedPod({ namespace: ns, name: impostor });
    expect(pod.metadata?.labels).toMatchObject(labels);

    await b.apps.deleteNamespacedDeployment({
      namespace: ns,
      name: 'impostor',
      propagationPolicy: 'Foreground',
    });
    await until(
      'Reconciled=True once it is gone',
      async () => ((await condition('stranger', 'Reconciled'))?.status === 'True' ? true : undefined),
      60_000,
      250,
    );
  });

  it("reports the API server's refusal of an owned object at once, and starts no pod", async () => {
    workers = await startRedisFunctions(b, ns, 'safety-refused', { replicas: { reconcile: 1, health: 1 } });
    // Admission cannot know every rule of the objects Tideway makes: a node selector key that is
    // not a label key passes the RedisCluster's schema and is refused in the StatefulSet.
    await rdc.apply('refused', {
      version: '7.0',
      replicas: 1,
      podTemplate: { nodeSelector: { 'bad key!': 'x' } },
    });
    const c = await until(
      'Reconciled=False Rejected',
      async () => {
        const r = await condition('refused', 'Reconciled');
        return r?.reason === 'Rejected' ? r : undefined;
      },
      20_000,
      250,
    );
    expect(c.status).toBe('False');
    expect(c.message).toMatch(/StatefulSet refused.*nodeSelector/s);
    await expect(b.apps.readNamespacedStatefulSet({ namespace: ns, name: 'refused' })).rejects.toThrow();
    expect(await rdc.pods('refused')).toEqual([]);
  });
});
