import { existsSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive } from '../../infra/testbed/process/alive.ts';
import { connectRedis } from '../../shared/redis/client.ts';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';

const APP = 'redis';
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The test bed's promise: the real StatefulSet controller, scheduler, PV binding, kube-proxy and
 * the node agent together run a replicated stateful workload like a real node would.
 */
describe('a StatefulSet of redis pods on the test bed', () => {
  const b = bed();
  let ns = '';

  const pod = (name: string) => b.core.readNamespacedPod({ namespace: ns, name });
  const readyPod = (name: string, notUid?: string) =>
    until(
      `${name} Ready`,
      async () => {
        const p = await pod(name);
        return isReady(p) && p.metadata?.uid !== notUid ? p : undefined;
      },
      120_000,
    );
  const redisAt = (host: string) => connectRedis({ host, port: 6379 });
  const endpointsOf = async (service: string) => {
    const slices = await b.discovery.listNamespacedEndpointSlice({
      namespace: ns,
      labelSelector: `kubernetes.io/service-name=${service}`,
    });
    return slices.items.flatMap((s) =>
      (s.endpoints ?? []).filter((e) => e.conditions?.ready).flatMap((e) => e.targetRef?.name ?? []),
    );
  };

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'sts');
    const labels = { app: APP };
    await b.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: `${APP}-headless` },
        spec: { clusterIP: 'None', selector: labels, ports: [{ name: 'redis', port: 6379 }] },
      },
    });
    await b.core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: APP }, spec: { selector: labels, ports: [{ name: 'redis', port: 6379 }] } },
    });
    await b.apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: APP },
        spec: {
          serviceName: `${APP}-headless`,
          replicas: 3,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              terminationGracePeriodSeconds: 10,
              containers: [
                {
                  name: 'redis',
                  image: 'redis:7.0',
                  command: ['redis-server'],
                  args: [
                    '--dir',
                    '/data',
                    '--appendonly',
                    'yes',
                    '--appendfsync',
                    'always',
                    '--save',
                    '',
                    '--protected-mode',
                    'no',
                  ],
                  ports: [{ containerPort: 6379, name: 'redis' }],
                  readinessProbe: {
                    exec: { command: ['redis-cli', 'ping'] },
                    periodSeconds: 1,
                    failureThreshold: 1,
                  },
                  livenessProbe: { tcpSocket: { port: 6379 }, periodSeconds: 2, failureThreshold: 3 },
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                  // Burstable: the API server fixes a pod's QoS class at creation, and a node
                  // that writes another one has every status write refused (the pods stay Pending).
                  resources: { requests: { cpu: '10m', memory: '32Mi' } },
                },
              ],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: 'data' },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
        },
      },
    });
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it('runs all three pods to Ready, each with a bound PVC', async () => {
    for (const name of [`${APP}-0`, `${APP}-1`, `${APP}-2`]) await readyPod(name);
    const pod = await b.core.readNamespacedPod({ namespace: ns, name: `${APP}-0` });
    expect(pod.status?.qosClass).toBe('Burstable');
    const pvcs = await b.core.listNamespacedPersistentVolumeClaim({ namespace: ns });
    expect(pvcs.items.map((c) => c.status?.phase)).toEqual(['Bound', 'Bound', 'Bound']);
  });

  it('serves every pod at its pod IP, and one of them through the ClusterIP Service', async () => {
    for (const name of [`${APP}-0`, `${APP}-1`, `${APP}-2`]) {
      const ip = (await pod(name)).status?.podIP;
      expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      using r = await redisAt(ip!);
      expect(await r.command('SET', 'owner', name)).toBe('OK');
    }
    const svc = await b.core.readNamespacedService({ namespace: ns, name: APP });
    await until('the Service to have three ready endpoints', async () =>
      (await endpointsOf(APP)).length === 3 ? true : undefined,
    );
    using viaService = await redisAt(svc.spec!.clusterIP!);
    expect([`${APP}-0`, `${APP}-1`, `${APP}-2`]).toContain(await viaService.command('GET', 'owner'));
  });

  it('brings a deleted pod back with its PVC data intact', async () => {
    const before = await pod(`${APP}-1`);
    await b.core.deleteNamespacedPod({ namespace: ns, name: `${APP}-1` });
    const after = await readyPod(`${APP}-1`, before.metadata?.uid);
    using r = await redisAt(after.status!.podIP!);
    expect(await r.command('GET', 'owner')).toBe(`${APP}-1`);
  });

  it('restarts a killed redis process, counting the restart', async () => {
    const before = await pod(`${APP}-2`);
    const restarts = before.status?.containerStatuses?.[0]?.restartCount ?? 0;
    await b.faults.killContainer(ns, `${APP}-2`, 'redis');
    const after = await until(
      'restart counted and Ready',
      async () => {
        const p = await pod(`${APP}-2`);
        return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) > restarts && isReady(p) ? p : undefined;
      },
      120_000,
    );
    using r = await redisAt(after.status!.podIP!);
    expect(await r.command('GET', 'owner')).toBe(`${APP}-2`);
  });

  it('keeps a held-down pod NotReady and out of the Service until released', async () => {
    await b.faults.holdDownPod(ns, `${APP}-0`);
    await until('redis-0 NotReady and out of the endpoints', async () => {
      const p = await pod(`${APP}-0`);
      return !isReady(p) && !(await endpointsOf(APP)).includes(`${APP}-0`) ? true : undefined;
    });
    // It stays down: a few seconds later it is still not back.
    await sleep(4000);
    expect(isReady(await pod(`${APP}-0`))).toBe(false);
    expect(await b.faults.containerPids(ns, `${APP}-0`)).toEqual({});

    await b.faults.releasePod(ns, `${APP}-0`);
    await readyPod(`${APP}-0`);
    await until('redis-0 back in the endpoints', async () =>
      (await endpointsOf(APP)).includes(`${APP}-0`) ? true : undefined,
    );
  });

  it('stops the processes of pods removed by scaling to 1', async () => {
    const pids = [
      ...Object.values(await b.faults.containerPids(ns, `${APP}-1`)),
      ...Object.values(await b.faults.containerPids(ns, `${APP}-2`)),
    ];
    expect(pids).toHaveLength(2);
    await b.apps.patchNamespacedStatefulSetScale({
      namespace: ns,
      name: APP,
      body: [{ op: 'replace', path: '/spec/replicas', value: 1 }],
    });
    await until(
      'pods 1 and 2 gone',
      async () => {
        const pods = await b.core.listNamespacedPod({ namespace: ns });
        return pods.items.length === 1 ? true : undefined;
      },
      120_000,
    );
    await until('their processes gone', async () => (pids.some(alive) ? undefined : true));
  });

  it('leaves no process or directory behind when the StatefulSet and its PVCs are deleted', async () => {
    const pids = Object.values(await b.faults.containerPids(ns, `${APP}-0`));
    expect(pids).toHaveLength(1);
    const pvs = (await b.core.listPersistentVolume()).items.filter(
      (pv) => pv.spec?.claimRef?.namespace === ns,
    );
    expect(pvs).toHaveLength(3);

    await b.apps.deleteNamespacedStatefulSet({ namespace: ns, name: APP });
    await b.core.deleteCollectionNamespacedPersistentVolumeClaim({ namespace: ns });
    await until(
      'pods gone',
      async () => ((await b.core.listNamespacedPod({ namespace: ns })).items.length === 0 ? true : undefined),
      120_000,
    );
    await until('processes gone', async () => (pids.some(alive) ? undefined : true));
    await until(
      'persistent volumes and their directories gone',
      async () => {
        const left = (await b.core.listPersistentVolume()).items.filter(
          (pv) => pv.spec?.claimRef?.namespace === ns,
        );
        const paths = pvs.map((pv) => pv.spec?.hostPath?.path ?? pv.spec?.local?.path ?? '');
        const remaining = paths.filter((p) => p === '' || existsSync(p));
        return left.length === 0 && remaining.length === 0 ? true : undefined;
      },
      60_000,
    );
  });
});
