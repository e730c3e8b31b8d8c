import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';

/** Where the API server is and how to prove who we are: what a request needs, nothing more. */
export type KubeConnection = {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Read per request: projected service-account tokens rotate under a running process. */
  token?: () => string;
  insecureSkipTLSVerify?: boolean;
};

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
  readonly retry = false;
}

const zKubeconfig = z.object({
  'current-context': z.string().optional(),
  clusters: z.array(
    z.object({
      name: z.string(),
      cluster: z.object({
        server: z.string().url(),
        'certificate-authority': z.string().optional(),
        'certificate-authority-data': z.string().optional(),
        'insecure-skip-tls-verify': z.boolean().optional(),
      }),
    }),
  ),
  users: z.array(
    z.object({
      name: z.string(),
      user: z
        .object({
          token: z.string().optional(),
          tokenFile: z.string().optional(),
          'client-certificate': z.string().optional(),
          'client-certificate-data': z.string().optional(),
          'client-key': z.string().optional(),
          'client-key-data': z.string().optional(),
        })
        .nullish(),
    }),
  ),
  contexts: z.array(
    z.object({ name: z.string(), context: z.object({ cluster: z.string(), user: z.string() }) }),
  ),
});

const IN_CLUSTER = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The connection a kubeconfig describes (KUBECONFIG, else ~/.kube/config), or the pod's own
 * service account when running in a cluster. Covers what Tideway's deployments and the test bed
 * use: CA, client certificates, bearer tokens (inline or from a file); exec plugins and
 * auth-provider entries are not supported and say so.
 */
export const loadKubeConnection = (env: NodeJS.ProcessEnv = process.env): KubeConnection => {
  const file = env.KUBECONFIG?.split(':').find(Boolean);
  if (!file && env.KUBERNETES_SERVICE_HOST) {
    const host = env.KUBERNETES_SERVICE_HOST.includes(':')
      ? `[${env.KUBERNETES_SERVICE_HOST}]`
      : env.KUBERNETES_SERVICE_HOST;
    return {
      server: `https://${host}:${env.KUBERNETES_SERVICE_PORT ?? '443'}`,
      ca: readFileSync(join(IN_CLUSTER, 'ca.crt')),
      token: () => readFileSync(join(IN_CLUSTER, 'token'), 'utf8').trim(),
    };
  }
  const path = file ?? join(homedir(), '.kube', 'config');
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${(error as Error).message}`);
  }
  const parsed = zKubeconfig.safeParse(raw);
  if (!parsed.success)
    throw new KubeConfigError(
      `kubeconfig ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const kc = parsed.data;
  const context = kc.contexts.find((c) => c.name === kc['current-context']) ?? kc.contexts[0];
  const cluster = kc.clusters.find((c) => c.name === context?.context.cluster)?.cluster;
  const user = kc.users.find((u) => u.name === context?.context.user)?.user ?? {};
  if (!context || !cluster)
    throw new KubeConfigError(`kubeconfig ${path}: no current context with a cluster`);
  const base = dirname(path);
  const fileOr = (data?: string, p?: string) =>
    data ? Buffer.from(data, 'base64') : p ? readFileSync(isAbsolute(p) ? p : join(base, p)) : undefined;
  const tokenFile = user.tokenFile;
  const token = user.token
    ? () => user.token as string
    : tokenFile
      ? () => readFileSync(isAbsolute(tokenFile) ? tokenFile : join(base, tokenFile), 'utf8').trim()
      : undefined;
  const ca = fileOr(cluster['certificate-authority-data'], cluster['certificate-authority']);
  const cert = fileOr(user['client-certificate-data'], user['client-certificate']);
  const key = fileOr(user['client-key-data'], user['client-key']);
  return {
    server: cluster.server.replace(/\/$/, ''),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(token ? { token } : {}),
    ...(cluster['insecure-skip-tls-verify'] ? { insecureSkipTLSVerify: true } : {}),
  };
};
