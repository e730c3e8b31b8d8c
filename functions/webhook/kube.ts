import { ApiStatusError, type KubeHttp } from '../../shared/kube/lite/http.ts';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';

/** The Secret (and its key) that holds a namespace's webhook secret. */
export const SECRET_NAME = 'tideway-webhook';
export const SECRET_KEY = 'secret';

export type Kind = keyof typeof TIDEWAY_KINDS;

/** What the webhook needs from Kubernetes; an interface so the app can be tested without a server. */
export type WebhookKube = {
  /** The value of the namespace's Secret tideway-webhook, key `secret`; undefined when either is missing. */
  webhookSecret(namespace: string): Promise<string | undefined>;
  get(kind: Kind, namespace: string, name: string): Promise<unknown>;
  list(kind: Kind, namespace: string): Promise<unknown[]>;
  /** The created object, or undefined when one of that name exists already. */
  create(kind: Kind, namespace: string, body: Record<string, unknown>): Promise<unknown>;
  /** Whether the API server answers and serves Tideway's group. */
  ready(): Promise<boolean>;
};

const seg = encodeURIComponent;
const pathOf = (kind: Kind, namespace: string, name?: string) => {
  const t = TIDEWAY_KINDS[kind];
  return `/apis/${t.group}/${t.version}/namespaces/${seg(namespace)}/${t.plural}${name ? `/${seg(name)}` : ''}`;
};
const notFound = (e: unknown) => e instanceof ApiStatusError && e.status === 404;
const PAGE = 500;
const TIMEOUT_MS = 10_000;

/** WebhookKube on the small HTTP client (a service process stays without client-node). */
export const liteWebhookKube = (kube: KubeHttp): WebhookKube => ({
  webhookSecret: async (namespace) => {
    try {
      const s = await kube.request<{ data?: Record<string, string> }>(
        'GET',
        `/api/v1/namespaces/${seg(namespace)}/secrets/${SECRET_NAME}`,
        { timeoutMs: TIMEOUT_MS },
      );
      const v = s.data?.[SECRET_KEY];
      return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
    } catch (error) {
      if (notFound(error)) return undefined;
      throw error;
    }
  },
  get: async (kind, namespace, name) => {
    try {
      return await kube.request('GET', pathOf(kind, namespace, name), { timeoutMs: TIMEOUT_MS });
    } catch (error) {
      if (notFound(error)) return undefined;
      throw error;
    }
  },
  list: async (kind, namespace) => {
    const items: unknown[] = [];
    let next: string | undefined;
    do {
      const page = await kube.request<{ items?: unknown[]; metadata?: { continue?: string } }>(
        'GET',
        pathOf(kind, namespace),
        { query: { limit: String(PAGE), continue: next }, timeoutMs: TIMEOUT_MS },
      );
      items.push(...(page.items ?? []));
      next = page.metadata?.continue || undefined;
    } while (next);
    return items;
  },
  create: async (kind, namespace, body) => {
    try {
      return await kube.request('POST', pathOf(kind, namespace), { body, timeoutMs: TIMEOUT_MS });
    } catch (error) {
      if (error instanceof ApiStatusError && error.status === 409) return undefined;
      throw error;
    }
  },
  ready: async () => {
    try {
      const t = TIDEWAY_KINDS.Restore;
      await kube.request('GET', `/apis/${t.group}/${t.version}`, { timeoutMs: 5000 });
      return true;
    } catch {
      return false;
    }
  },
});
