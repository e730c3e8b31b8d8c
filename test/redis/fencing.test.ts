import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_NAMESPACE } from '../../infra/install.ts';
import { serviceAccountOf, writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import { statusOf } from '../../shared/kube/errors.ts';
import { parseInfo, parseReplication } from '../../shared/redis/info.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import type { Worker } from '../support/functions.ts';
import {
  eventReasons,
  ipOf,
  missingKeys,
  redisAt,
  redisClusters,
  refusals,
  startRedisFunctions,
} from '../support/redis.ts';

type Cond = { type: string; status: string; reason: string; message: string };

/**
 * A failover acts only on what it judged: a target that restarted between the probe and the
 * promotion is not promoted, and a master the API server will not take off the master Service
 * is not replaced. Each test fails on the code before its fix.
 */
describe('redis failover fencing', () => {
  const b = bed();
  let ns = '';
  let workers: Worker[] = [];
  const rdc = redisClusters(b, () => ns);
  const condition = async (name: string, type: string) =>
    ((await rdc.get(name)).status?.conditions as Cond[] | undefined)?.find((c) => c.type === type);
  const info = async (ip: string, pw: string) => {
    const c = await redisAt(ip, pw);
    try {
      return parseInfo(String(await c.command('INFO')));
    } finally {
      c.close();
    }
  };
  const podIp = async (name: string, pod: string) =>
    ipOf((await rdc.pods(name)).find((p) => p.metadata?.name === pod));
  /** Keys on the master, acknowledged by every replica (WAIT), saved to disk on the master only. */
  const writeKeys = async (name: string, pw: string, n: number) => {
    const rc = await rdc.get(name);
    const keys = Array.from({ length: n }, (_, i) => `k${i}`);
    const m = await redisAt(await podIp(name, rc.status?.master ?? ''), pw);
    try {
      for (const k of keys) await m.command('SET', k, k);
      const replicas = (rc.spec.replicas ?? 3) - 1;
      expect(Number(await m.command('WAIT', replicas, 5000))).toBe(replicas);
      await m.command('SAVE');
    } finally {
      m.close();
    }
    return keys;
  };

  beforeAll(async () => {
    await installCrds(b.info);
    ns = await createNamespace(b.core, 'redis-fencing');
  });

  afterEach(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    expect(refusals(workers)).toEqual([]);
    workers = [];
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('does not promote a replica that restarted between the probe and the promotion; the record goes back and no key is lost', async () => {
    // The health replica pauses right before REPLICAOF NO ONE (the record already names the
    // target), short of its lease: long enough for the target to restart meanwhile.
    workers = await startRedisFunctions(b, ns, 'fencing-restart', {
      replicas: { reconcile: 1, health: 1 },
      env: { health: { TIDEWAY_FAILPOINTS: 'failover.before-promote=stall:5000' } },
    });
    await rdc.apply('restart', { version: '7.0', replicas: 2, failover: { after: '3s' } });
    await rdc.ready('restart');
    const pw = await rdc.password('restart');
    const keys = await writeKeys('restart', pw, 200);
    const ip1 = await podIp('restart', 'restart-1');
    const runBefore = (await info(ip1, pw)).server?.run_id;

    await b.faults.holdDownPod(ns, 'restart-0');
    await until(
      'the failover paused before promoting restart-1',
      async () => (workers.some((w) => w.output().includes('failpoint: stalling')) ? true : undefined),
      30_000,
      100,
    );
    expect((await rdc.get('restart')).status?.master).toBe('restart-1');
    // The target restarts (SIGKILL): it comes back fenced, from what its disk held, not from
    // what was judged (it never saved the 200 keys).
    await b.faults.killContainer(ns, 'restart-1');
    await until(
      'restart-1 answering again as another process',
      async () => {
        const i = await info(ip1, pw).catch(() => undefined);
        return i?.server?.run_id && i.server.run_id !== runBefore ? true : undefined;
      },
      20_000,
      100,
    );

    // The paused run wakes up, finds another process, and undoes its record.
    const healthy = await until(
      'the record back on restart-0, nobody promoted (NoSafeCandidate)',
      async () => {
        const rc = await rdc.get('restart');
        const c = await condition('restart', 'Healthy');
        return rc.status?.master === 'restart-0' && c?.reason === 'NoSafeCandidate' ? c : undefined;
      },
      30_000,
      250,
    );
    expect(healthy.message).toContain('restart-1');
    await sleep(5000);
    const rc = await rdc.get('restart');
    expect(rc.status?.master).toBe('restart-0');
    expect(rc.status?.failover?.count ?? 0).toBe(0);
    expect(parseReplication(await info(ip1, pw)).role).toBe('replica');

    await b.faults.releasePod(ns, 'restart-0');
    expect((await rdc.ready('restart', 90_000)).status?.master).toBe('restart-0');
    for (const p of await rdc.pods('restart'))
      expect(await missingKeys(ipOf(p), pw, keys), `${p.metadata?.name} lost keys`).toEqual([]);
  });

  it('does not promote while the API server refuses to take the old master off the master Service (FencingFailed); does once it accepts', async () => {
    workers = await startRedisFunctions(b, ns, 'fencing-unlabel', { replicas: { reconcile: 1, health: 1 } });
    await rdc.apply('unlabel', { version: '7.0', replicas: 2, failover: { after: '3s' } });
    await rdc.ready('unlabel');
    const pw = await rdc.password('unlabel');
    const keys = await writeKeys('unlabel', pw, 100);

    // A real refusal: an admission policy that denies health's ServiceAccount any change of the
    // master's pod (reconcile's own label changes still pass).
    const policy = `fencing-${ns}`;
    const health = `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccountOf('health')}`;
    const manifest = [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] },
            ],
          },
          matchConditions: [{ name: 'health', expression: `request.userInfo.username == '${health}'` }],
          validations: [
            {
              expression: "object.metadata.name != 'unlabel-0'",
              message: 'the test keeps health from changing pod unlabel-0',
              reason: 'Invalid',
            },
          ],
        },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
        },
      },
    ];
    await b.kubectlIn(
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifest }),
      'apply',
      '-f',
      '-',
    );
    const removePolicy = () =>
      b.kubectl(
        'delete',
        '--ignore-not-found',
        `validatingadmissionpolicybinding/${policy}`,
        `validatingadmissionpolicy/${policy}`,
      );
    try {
      // In force once health's own (no-op) patch of the pod is refused.
      const admin = new KubeConfig();
      admin.loadFromFile(b.info.kubeconfig);
      const asHealth = new KubeConfig();
      asHealth.loadFromFile(
        await writeFunctionKubeconfig({ admin, fn: 'health', dir: `${b.info.dir}/fencing-policy` }),
      );
      const core = asHealth.makeApiClient(CoreV1Api);
      await until(
        'the policy refuses health',
        async () => {
          const code = await core
            .patchNamespacedPod(
              { namespace: ns, name: 'unlabel-0', body: { metadata: { labels: {} } } },
              setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
            )
            .then(
              () => 200,
              (e: unknown) => statusOf(e),
            );
          return code === 422 ? true : undefined;
        },
        30_000,
        250,
      );

      await b.faults.holdDownPod(ns, 'unlabel-0');
      const refused = await until(
        'Healthy=False FencingFailed',
        async () => {
          const c = await condition('unlabel', 'Healthy');
          return c?.reason === 'FencingFailed' ? c : undefined;
        },
        30_000,
        250,
      );
      expect(refused.status).toBe('False');
      expect(refused.message).toContain('could not take unlabel-0 off the master Service');
      expect(refused.message).toContain('the test keeps health from changing pod unlabel-0');
      // Well past failover.after, health keeps trying and keeps refusing to promote.
      await sleep(6000);
      const rc = await rdc.get('unlabel');
      expect(rc.status?.master).toBe('unlabel-0');
      expect(rc.status?.failover?.count ?? 0).toBe(0);
      expect((await condition('unlabel', 'Healthy'))?.reason).toBe('FencingFailed');
      expect(parseReplication(await info(await podIp('unlabel', 'unlabel-1'), pw)).role).toBe('replica');
      expect(await eventReasons(b, ns, 'unlabel')).not.toContain('Failover');
    } finally {
      await removePolicy();
    }

    // The API server accepts again: the failover goes ahead.
    const after = await until(
      'failover once the policy is gone',
      async () => {
        const rc = await rdc.get('unlabel');
        return rc.status?.master === 'unlabel-1' ? rc : undefined;
      },
      30_000,
      250,
    );
    expect(after.status?.failover?.last).toMatchObject({ from: 'unlabel-0', to: 'unlabel-1' });
    expect(parseReplication(await info(await podIp('unlabel', 'unlabel-1'), pw)).role).toBe('master');
    await b.faults.releasePod(ns, 'unlabel-0');
    expect((await rdc.ready('unlabel', 90_000)).status?.master).toBe('unlabel-1');
    for (const p of await rdc.pods('unlabel'))
      expect(await missingKeys(ipOf(p), pw, keys), `${p.metadata?.name} lost keys`).toEqual([]);
  });
});
