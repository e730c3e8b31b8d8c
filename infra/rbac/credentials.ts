import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { SYSTEM_NAMESPACE } from '../install.ts';

const here = dirname(fileURLToPath(import.meta.url));

export const serviceAccountOf = (fn: string) => `tideway-${fn}`;
/** The manifest granting a function its rights, if it has one (product functions do). */
export const rbacManifestOf = (fn: string) => {
  const file = resolve(here, `${fn}.yaml`);
  return existsSync(file) ? file : undefined;
};

/**
 * A kubeconfig that acts as the function's ServiceAccount, with a bound token from the
 * TokenRequest API: what a function's pod gets from its projected token when deployed, for
 * functions that run as local processes (npm start, the e2e tests). Written 0600.
 */
export const writeFunctionKubeconfig = async (o: {
  admin: KubeConfig;
  fn: string;
  dir: string;
  ttlSeconds?: number;
}): Promise<string> => {
  const cluster = o.admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
  const token = await o.admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: serviceAccountOf(o.fn),
    namespace: SYSTEM_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: o.ttlSeconds ?? 86_400 } },
  });
  const name = serviceAccountOf(o.fn);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: cluster.name,
        cluster: {
          server: cluster.server,
          ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
          ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : {}),
        },
      },
    ],
    users: [{ name, user: { token: token.status?.token } }],
    contexts: [{ name, context: { cluster: cluster.name, user: name } }],
    'current-context': name,
  };
  await mkdir(o.dir, { recursive: true, mode: 0o700 });
  const file = join(o.dir, `${o.fn}.kubeconfig`);
  await writeFile(file, stringify(config), { mode: 0o600 });
  return file;
};
