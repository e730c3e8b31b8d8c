import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ETCD_IMAGES } from '../../infra/testbed/image-table/etcd-images.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { etcdctlJob } from '../support/etcdctl.ts';

const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The official etcd images EtcdCluster runs, on the test bed: a single-member StatefulSet whose
 * pod spec is written for the real image (its etcd at /usr/local/bin, the data directory on a
 * claim under /var/run/etcd as etcd's Kubernetes guide has it, client URL on the pod IP) serves
 * etcdctl run from the same image, reports the tag's version and keeps its data across a pod
 * deletion.
 */
describe('the official etcd images on the test bed', () => {
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

  /** etcdctl from `image` in a Job (the image has no shell: the program itself); its output. */
  const etcdctl = async (job: string, image: string, args: string[]) => {
    const r = await etcdctlJob(b, ns, job, image, args);
    expect(r.ok, `etcdctl ${args.join(' ')}: ${r.log}`).toBe(true);
    return r.log;
  };

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'etcd-image');
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  for (const [minor, image] of Object.entries(ETCD_IMAGES)) {
    const version = image.slice(image.lastIndexOf(':v') + 2);
    const app = `etcd-${minor.replace('.', '')}`;
    const member = `${app}-0`;

    describe(image, () => {
      beforeAll(async () => {
        const labels = { app };
        await b.core.createNamespacedService({
          namespace: ns,
          body: {
            metadata: { name: app },
            spec: {
              clusterIP: 'None',
              selector: labels,
              ports: [
                { name: 'client', port: 2379 },
                { name: 'peer', port: 2380 },
              ],
            },
          },
        });
        await b.apps.createNamespacedStatefulSet({
          namespace: ns,
          body: {
            metadata: { name: app },
            spec: {
              serviceName: app,
              replicas: 1,
              selector: { matchLabels: labels },
              template: {
                metadata: { labels },
                spec: {
                  terminationGracePeriodSeconds: 10,
                  containers: [
                    {
                      name: 'etcd',
                      image,
                      command: ['/usr/local/bin/etcd'],
                      args: [
                        '--name=$(POD_NAME)',
                        '--data-dir=/var/run/etcd/default.etcd',
                        '--listen-client-urls=http://0.0.0.0:2379',
                        '--advertise-client-urls=http://$(POD_IP):2379',
                        '--listen-peer-urls=http://0.0.0.0:2380',
                        '--initial-advertise-peer-urls=http://$(POD_IP):2380',
                        '--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380',
                        '--initial-cluster-state=new',
                      ],
                      env: [
                        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                        { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                      ],
                      ports: [
                        { name: 'client', containerPort: 2379 },
                        { name: 'peer', containerPort: 2380 },
                      ],
                      readinessProbe: { httpGet: { path: '/health', port: 2379 }, periodSeconds: 1 },
                      volumeMounts: [{ name: 'data', mountPath: '/var/run/etcd' }],
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

      it(`serves etcdctl ${version} from the same image, and reports version ${version}`, async () => {
        const p = await readyPod(member);
        const ip = p.status?.podIP ?? '';
        const endpoints = `--endpoints=http://${ip}:2379`;
        expect(
          await etcdctl(`put-${app}`, image, [endpoints, 'put', 'greeting', `from ${version}`]),
        ).toContain('OK');
        const got = await etcdctl(`get-${app}`, image, [endpoints, 'get', 'greeting', '--print-value-only']);
        expect(got.trim().split('\n')).toContain(`from ${version}`);
        expect(await etcdctl(`version-${app}`, image, ['version'])).toContain(`etcdctl version: ${version}`);

        const reported = await until(
          `${member}'s cluster version`,
          async () => {
            const v = (await (await fetch(`http://${ip}:2379/version`)).json()) as Record<string, string>;
            return v.etcdcluster !== 'not_decided' ? v : undefined;
          },
          30_000,
        );
        // 3.6 also reports its storage version.
        expect(reported).toMatchObject({ etcdserver: version, etcdcluster: `${minor}.0` });
      });

      it('keeps its data in the claim across a pod deletion', async () => {
        const first = await readyPod(member);
        const pvc = await b.core.readNamespacedPersistentVolumeClaim({
          namespace: ns,
          name: `data-${member}`,
        });
        const pv = await b.core.readPersistentVolume({ name: pvc.spec?.volumeName ?? '' });
        const claimDir = pv.spec?.hostPath?.path ?? pv.spec?.local?.path ?? '';
        // --data-dir under /var/run/etcd is the claim's directory, not the container's root.
        expect(existsSync(join(claimDir, 'default.etcd', 'member', 'wal'))).toBe(true);

        await b.core.deleteNamespacedPod({ namespace: ns, name: member });
        const second = await readyPod(member, first.metadata?.uid);
        const endpoints = `--endpoints=http://${second.status?.podIP}:2379`;
        const got = await etcdctl(`get-again-${app}`, image, [
          endpoints,
          'get',
          'greeting',
          '--print-value-only',
        ]);
        expect(got.trim().split('\n')).toContain(`from ${version}`);
      });
    });
  }
});
