import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis } from '../../shared/redis/client.ts';
import { bed, createNamespace, until } from '../support/bed.ts';

const APP = 'aof';
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The official redis image works in /data (its WORKDIR): `redis-server --appendonly yes` with a
 * PVC at /data writes its AOF into the claim, so a new pod of the StatefulSet finds the data. The
 * image table carries that config; without it the file went to the container's throw-away root.
 */
describe('a redis image without --dir, on a PVC at its WORKDIR /data', () => {
  const b = bed();
  let ns = '';

  const readyPod = (name: string, notUid?: string) =>
    until(
      `${name} Ready`,
      async () => {
        const p = await b.core.readNamespacedPod({ namespace: ns, name });
        return isReady(p) && p.metadata?.uid !== notUid ? p : undefined;
      },
      120_000,
    );

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'workdir');
    const labels = { app: APP };
    await b.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: APP },
        spec: { clusterIP: 'None', selector: labels, ports: [{ port: 6379 }] },
      },
    });
    await b.apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: APP },
        spec: {
          serviceName: APP,
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              terminationGracePeriodSeconds: 10,
              containers: [
                {
                  name: 'redis',
                  image: 'redis:7.0',
                  // As in the image's docs: the entrypoint runs it, no --dir, no config file.
                  args: ['redis-server', '--appendonly', 'yes'],
                  readinessProbe: { exec: { command: ['redis-cli', 'ping'] }, periodSeconds: 1 },
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
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

  it('keeps the data across a pod deletion, in the claim', async () => {
    const first = await readyPod(`${APP}-0`);
    {
      using r = await connectRedis({ host: first.status?.podIP ?? '', port: 6379 });
      expect(await r.command('SET', 'kept', 'across pods')).toBe('OK');
      expect(await r.command('CONFIG', 'GET', 'dir')).toEqual(['dir', '/data']);
    }
    const pvc = await b.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: `data-${APP}-0` });
    const pv = await b.core.readPersistentVolume({ name: pvc.spec?.volumeName ?? '' });
    const claimDir = pv.spec?.hostPath?.path ?? pv.spec?.local?.path ?? '';
    // The AOF lives in the claim's directory on the node, not in the container.
    await until('the AOF in the claim', async () =>
      existsSync(join(claimDir, 'appendonlydir')) ? true : undefined,
    );

    await b.core.deleteNamespacedPod({ namespace: ns, name: `${APP}-0` });
    const second = await readyPod(`${APP}-0`, first.metadata?.uid);
    using r = await connectRedis({ host: second.status?.podIP ?? '', port: 6379 });
    expect(await r.command('GET', 'kept')).toBe('across pods');
  });
});
