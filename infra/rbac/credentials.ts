import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { SYSTEM_NAMESPACE } from '../install.ts';

const here = dirname(fileURLToPath(import.meta.url));

import { serviceAccountOf } from '../../shared/runtime/identity.ts';

export { serviceAccountOf };
/** The manifest granting a function its rights, if it has one (product functions do). */
export const rbacManifestOf = (fn: string) => {
  const file = resolve(here, `${fn}.yaml`);
  return existsSync(file) ? file : undefined;
};

/**
 * Fail closed: every function runs as its own ServiceAccount with least privilege, so one without
 * roles of its own is not started at all (rather than with the admin's).
 */
export const requireRoles = (fns: readonly string[]) => {
  const missing = fns.filter((fn) => !rbacManifestOf(fn));
  if (missing.length > 0)
    throw new Error(
      `${missing.map((fn) => `function ${fn} has no roles: infra/rbac/${fn}.yaml is missing`).join('; ')}. Every function runs as its own ServiceAccount with least privilege; add the file (see docs/architecture.md)`,
    );
};

const DAY = 86_400;

/**
 * Mints a bound token for the function's ServiceAccount (TokenRequest API) into `<fn>.token`,
 * replaced atomically, so that a process reading it never sees half a token.
 */
const mintToken = async (admin: KubeConfig, fn: string, dir: string, ttlSeconds: number) => {
  const minted = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: serviceAccountOf(fn),
    namespace: SYSTEM_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: ttlSeconds } },
  });
  const token = minted.status?.token;
  if (!token) throw new Error(`the API server returned no token for ${serviceAccountOf(fn)}`);
  const file = join(dir, `${fn}.token`);
  const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmp, token, { mode: 0o600 });
  await rename(tmp, file);
  // The server may shorten the lifetime (--service-account-max-token-expiration).
  const expires = minted.status?.expirationTimestamp;
  return { file, expiresAt: expires ? new Date(expires).getTime() : Date.now() + ttlSeconds * 1000 };
};

/**
 * A kubeconfig that acts as the function's ServiceAccount, with a bound token from the
 * TokenRequest API: what a function's pod gets from its projected token when deployed, for
 * functions that run as local processes (npm start, the e2e tests). Written 0600. The token lives
 * in a file of its own that clients re-read, as in-cluster (the small client per request,
 * client-node's `tokenFile` auth provider every minute), so `keepTokensFresh` can renew it under
 * running processes.
 */
export const writeFunctionKubeconfig = async (o: {
  admin: KubeConfig;
  fn: string;
  dir: string;
  ttlSeconds?: number;
}): Promise<string> => {
  const cluster = o.admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
  await mkdir(o.dir, { recursive: true, mode: 0o700 });
  const { file: tokenFile } = await mintToken(o.admin, o.fn, o.dir, o.ttlSeconds ?? DAY);
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
    users: [{ name, user: { tokenFile, 'auth-provider': { name: 'tokenFile', config: { tokenFile } } } }],
    contexts: [{ name, context: { cluster: cluster.name, user: name } }],
    'current-context': name,
  };
  const file = join(o.dir, `${o.fn}.kubeconfig`);
  await writeFile(file, stringify(config), { mode: 0o600 });
  return file;
};

/**
 * Renews the functions' tokens at half their lifetime (as the API server granted it): `npm start`
 * outlives a day-long token, and a function whose token expired would only see 401s. A failed
 * renewal is retried a minute later.
 */
export const keepTokensFresh = (o: {
  admin: KubeConfig;
  fns: readonly string[];
  dir: string;
  ttlSeconds?: number;
  onError: (fn: string, error: unknown) => void;
}) => {
  const ttl = o.ttlSeconds ?? DAY;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> | undefined;
  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => void renew(), ms);
    timer.unref();
  };
  const mintAll = async () => {
    let next = ttl * 1000;
    for (const fn of o.fns) {
      if (stopped) return;
      try {
        const { expiresAt } = await mintToken(o.admin, fn, o.dir, ttl);
        next = Math.min(next, (expiresAt - Date.now()) / 2);
      } catch (error) {
        o.onError(fn, error);
        next = 60_000;
      }
    }
    schedule(Math.max(next, 1000));
  };
  /** Renews every token now (one renewal at a time); the next is scheduled from the new ones. */
  const renew = () => {
    clearTimeout(timer);
    running ??= mintAll().finally(() => {
      running = undefined;
    });
    return running;
  };
  schedule((ttl * 1000) / 2);
  return {
    renew,
    /** No renewal after this resolves. */
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
};
