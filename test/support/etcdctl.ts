import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BatchV1Api } from '@kubernetes/client-node';
import { type bed, until } from './bed.ts';

/**
 * etcdctl as a client in the cluster runs it: a Job from an etcd image (which has no shell: the
 * program itself). Whether it succeeded, and its output (the node agent's log of the container).
 */
export const etcdctlJob = async (
  b: ReturnType<typeof bed>,
  ns: string,
  job: string,
  image: string,
  args: string[],
  /** A Secret mounted at /tls (e.g. a cluster's client certificate: --cacert=/tls/ca.crt …). */
  secret?: string,
) => {
  const batch = b.kc.makeApiClient(BatchV1Api);
  await batch.createNamespacedJob({
    namespace: ns,
    body: {
      metadata: { name: job },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [
              {
                name: 'etcdctl',
                image,
                command: ['/usr/local/bin/etcdctl'],
                args,
                ...(secret ? { volumeMounts: [{ name: 'tls', mountPath: '/tls', readOnly: true }] } : {}),
              },
            ],
            ...(secret ? { volumes: [{ name: 'tls', secret: { secretName: secret } }] } : {}),
          },
        },
      },
    },
  });
  const done = await until(
    `Job ${job} to finish`,
    async () => {
      const j = await batch.readNamespacedJob({ namespace: ns, name: job });
      return (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0 ? j : undefined;
    },
    120_000,
  );
  const pods = await b.core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${job}` });
  const uid = pods.items[0]?.metadata?.uid ?? '';
  const log = await readFile(join(b.info.dir, 'node', 'pods', uid, 'etcdctl.log'), 'utf8').catch(() => '');
  return { ok: done.status?.succeeded === 1, log };
};
