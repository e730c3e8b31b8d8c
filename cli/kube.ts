import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import type { z } from 'zod';
import {
  type Backup,
  type RedisCluster,
  type Restore,
  zBackup,
  zRedisCluster,
  zRestore,
} from '../shared/api/generated.ts';
import { isRetryableApiError, statusOf } from '../shared/kube/errors.ts';
import { TIDEWAY_KINDS } from '../shared/kube/resources.ts';
import { CliError } from './errors.ts';

type Kind = keyof Pick<typeof TIDEWAY_KINDS, 'RedisCluster' | 'Backup' | 'Restore'>;
type Created = { name: string };

/** What the CLI needs of the Kubernetes API; one implementation below, fakes in unit tests. */
export interface TidewayApi {
  readonly defaultNamespace: string;
  getCluster(namespace: string, name: string): Promise<RedisCluster>;
  getBackup(namespace: string, name: string): Promise<Backup>;
  getRestore(namespace: string, name: string): Promise<Restore>;
  /** The namespace's Backups / Restores (objects not as the CRD describes are left out). */
  listBackups(namespace: string): Promise<Backup[]>;
  listRestores(namespace: string): Promise<Restore[]>;
  /** Creates; `name` exact, or generated from `generateName`. Resolves with the created name. */
  create(kind: 'Backup' | 'Restore', namespace: string, object: Record<string, unknown>): Promise<Created>;
}

/** A read that may fail for a moment (API server restart, timeout) and be tried again. */
export class TransientApiError extends CliError {}

/**
 * The kubeconfig from KUBECONFIG or ~/.kube/config (or the pod's service account), as kubectl
 * finds it. client-node would otherwise fall back to http://localhost:8080 without a word.
 */
export const loadKubeConfig = (env: NodeJS.ProcessEnv = process.env): KubeConfig => {
  const kc = new KubeConfig();
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (files.length > 0 && !files.some((f) => existsSync(f)))
    throw new CliError(`no kubeconfig: KUBECONFIG names ${files.join(', ')}, which does not exist`);
  const inCluster = env.KUBERNETES_SERVICE_HOST !== undefined;
  if (files.length === 0 && !existsSync(join(homedir(), '.kube', 'config')) && !inCluster)
    throw new CliError('no kubeconfig: set KUBECONFIG or create ~/.kube/config (as for kubectl)');
  try {
    // As kubectl: the files of KUBECONFIG that exist, merged in order (the first one's current
    // context wins); a missing one is skipped, where client-node's loadFromDefault would fail.
    const present = files.filter((f) => existsSync(f));
    if (present.length === 0) kc.loadFromDefault();
    else
      for (const [i, f] of present.entries()) {
        if (i === 0) kc.loadFromFile(f);
        else {
          const more = new KubeConfig();
          more.loadFromFile(f);
          // An entry named in an earlier file stays that file's (client-node would throw).
          const fresh = <T extends { name: string }>(mine: T[], theirs: T[]) =>
            theirs.filter((t) => !mine.some((m) => m.name === t.name));
          more.loadFromOptions({
            clusters: fresh(kc.clusters, more.clusters),
            users: fresh(kc.users, more.users),
            contexts: fresh(kc.contexts, more.contexts),
            currentContext: more.currentContext,
          });
          kc.mergeConfig(more, true);
          // The first file that names a current context wins, as with kubectl.
          if (!kc.getCurrentContext() && more.currentContext) kc.setCurrentContext(more.currentContext);
        }
      }
  } catch (e) {
    throw new CliError(`the kubeconfig cannot be read: ${(e as Error).message}`, 1, { cause: e });
  }
  if (!kc.getCurrentCluster())
    throw new CliError('the kubeconfig has no current context with a cluster (kubectl config use-context …)');
  return kc;
};

/** The API server's own message (admission, CEL, RBAC), verbatim, from a client-node error. */
export const apiMessage = (error: unknown): string => {
  const body = (error as { body?: unknown }).body;
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const m = (parsed as { message?: unknown } | undefined)?.message;
  if (typeof m === 'string' && m !== '') return m;
  const cause = (error as { cause?: { code?: string } }).cause?.code;
  return cause ? `${cause}: ${(error as Error).message}` : String((error as Error)?.message ?? error);
};
const safeJson = (s: string): unknown => {
  try {
    return JSON.parse(s);
  } catch {
    return { message: s };
  }
};

const what = (kind: Kind, namespace: string, name: string) => `${kind} "${name}" in namespace "${namespace}"`;

export const kubeApi = (kc: KubeConfig): TidewayApi => {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const server = kc.getCurrentCluster()?.server ?? '?';
  const fail = (action: string, e: unknown): never => {
    const code = statusOf(e);
    if (code === undefined)
      throw new TransientApiError(`cannot reach the API server at ${server}: ${apiMessage(e)}`, 1, {
        cause: e,
      });
    const message = `${action}: ${apiMessage(e)}`;
    throw isRetryableApiError(e)
      ? new TransientApiError(message, 1, { cause: e })
      : new CliError(message, 1, { cause: e });
  };
  const get = async <S extends z.ZodType>(kind: Kind, schema: S, namespace: string, name: string) => {
    let raw: unknown;
    try {
      raw = await custom.getNamespacedCustomObject({ ...TIDEWAY_KINDS[kind], namespace, name });
    } catch (e) {
      if (statusOf(e) === 404)
        throw new CliError(`${what(kind, namespace, name)} not found`, 1, { cause: e });
      return fail(`reading ${what(kind, namespace, name)}`, e);
    }
    const r = schema.safeParse(raw);
    if (!r.success)
      throw new CliError(`${what(kind, namespace, name)} is not as the CRD describes: ${r.error.message}`);
    return r.data as z.infer<S>;
  };
  const list = async <S extends z.ZodType>(kind: Kind, schema: S, namespace: string) => {
    let raw: { items?: unknown[] };
    try {
      raw = (await custom.listNamespacedCustomObject({ ...TIDEWAY_KINDS[kind], namespace })) as {
        items?: unknown[];
      };
    } catch (e) {
      return fail(`listing the ${kind}s in namespace "${namespace}"`, e);
    }
    return (raw.items ?? []).flatMap((i) => {
      const r = schema.safeParse(i);
      return r.success ? [r.data as z.infer<S>] : [];
    });
  };
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return {
    defaultNamespace: ctx?.namespace ?? 'default',
    getCluster: (ns, name) => get('RedisCluster', zRedisCluster, ns, name),
    getBackup: (ns, name) => get('Backup', zBackup, ns, name),
    getRestore: (ns, name) => get('Restore', zRestore, ns, name),
    listBackups: (ns) => list('Backup', zBackup, ns),
    listRestores: (ns) => list('Restore', zRestore, ns),
    create: async (kind, namespace, object) => {
      try {
        const created = (await custom.createNamespacedCustomObject({
          ...TIDEWAY_KINDS[kind],
          namespace,
          body: { apiVersion: 'tideway.dev/v1alpha1', kind, ...object },
        })) as { metadata?: { name?: string } };
        return { name: created.metadata?.name ?? '' };
      } catch (e) {
        // A refused create is final: the message (admission, CEL) says what to fix.
        throw new CliError(`the API server refused the ${kind}: ${apiMessage(e)}`, 1, { cause: e });
      }
    },
  };
};
