import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { writeFunctionKubeconfig } from '../../infra/rbac/credentials.ts';
import { bed, createNamespace, until } from '../support/bed.ts';
import { installCrds } from '../support/crds.ts';
import { spawnWorker, type Worker } from '../support/functions.ts';
import { SERVERLESS } from '../support/redis.ts';

/**
 * Fail closed: a product function acts only as its own ServiceAccount, and never with more than
 * its roles. Started with the admin kubeconfig, or as an account of its name bound to
 * cluster-admin, it does not start, and says why.
 */
describe('a function without its own identity does not start', () => {
  const b = bed();
  const admin = new KubeConfig();
  let ns = '';
  const workers: Worker[] = [];

  beforeAll(async () => {
    await installCrds(b.info);
    admin.loadFromFile(b.info.kubeconfig);
    ns = await createNamespace(b.core, 'failclosed');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await admin
      .makeApiClient(RbacAuthorizationV1Api)
      .deleteClusterRoleBinding({ name: `failclosed-${ns}` })
      .catch(() => undefined);
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  /** Starts `fn` of the product with this kubeconfig; resolves with its exit code and output. */
  const start = async (fn: string, kubeconfig: string) => {
    const w = spawnWorker(
      fn,
      { NATS_URL: b.info.natsUrl, KUBECONFIG: kubeconfig, TIDEWAY_WATCH_NAMESPACE: ns },
      SERVERLESS,
    );
    workers.push(w);
    return until(
      `${fn} exited`,
      async () => (w.exitCode() === null ? undefined : { code: w.exitCode(), output: w.output() }),
      30_000,
      100,
    );
  };

  it('with the admin kubeconfig: exits 78, naming the ServiceAccount and the roles it should have', async () => {
    const { code, output } = await start('health', b.info.kubeconfig);
    expect(code).toBe(78);
    expect(output).toContain('not as a ServiceAccount');
    expect(output).toContain('tideway-health');
    expect(output).toContain('infra/rbac/health.yaml');
  });

  it('as an account of its name bound to cluster-admin: exits 78', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({
      namespace: ns,
      body: { metadata: { name: 'tideway-reconcile' } },
    });
    await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: `failclosed-${ns}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: 'tideway-reconcile', namespace: ns }],
      },
    });
    const token = (
      await core.createNamespacedServiceAccountToken({
        name: 'tideway-reconcile',
        namespace: ns,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token;
    const cluster = admin.getCurrentCluster();
    const file = join(b.info.dir, `failclosed-${ns}.kubeconfig`);
    await writeFile(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'bed',
            cluster: { server: cluster?.server, 'certificate-authority-data': cluster?.caData },
          },
        ],
        users: [{ name: 'sa', user: { token } }],
        contexts: [{ name: 'sa', context: { cluster: 'bed', user: 'sa' } }],
        'current-context': 'sa',
      }),
      { mode: 0o600 },
    );
    const { code, output } = await start('reconcile', file);
    expect(code).toBe(78);
    expect(output).toContain('may do anything in the cluster');
  });

  it('as its own ServiceAccount: starts', async () => {
    const kubeconfig = await writeFunctionKubeconfig({
      admin,
      fn: 'health',
      dir: join(b.info.dir, 'function-credentials', `failclosed-${ns}`),
    });
    const w = spawnWorker(
      'health',
      {
        NATS_URL: b.info.natsUrl,
        KUBECONFIG: kubeconfig,
        TIDEWAY_WATCH_NAMESPACE: ns,
        TIDEWAY_LOG_LEVEL: 'info',
      },
      SERVERLESS,
    );
    workers.push(w);
    await until(
      'health started',
      async () => (w.output().includes('"msg":"started"') ? true : undefined),
      30_000,
      100,
    );
    expect(w.output()).toContain('system:serviceaccount:tideway-system:tideway-health');
    expect(w.exitCode()).toBe(null);
  });
});
