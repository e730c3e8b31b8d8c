import { zNamespaceName } from '../../shared/kube/names.ts';
import type { Metrics } from '../../shared/runtime/metrics.ts';
import type { Ctx } from './context.ts';
import { incompleteBody, WebhookError } from './errors.ts';
import { zObjectName } from './intent.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { SecretKeys } from './secrets.ts';
import { parseSignatureHeaders, signedWith } from './signature.ts';

export type AuthDeps = {
  readonly keys: SecretKeys;
  readonly metrics: Metrics;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** `id`: per namespace and webhook-id, taken first: replays of one request never spend the namespace's. */
  readonly limits: { readonly namespace: RateLimiter; readonly id: RateLimiter };
  /** Serve only this namespace (TIDEWAY_WATCH_NAMESPACE). */
  readonly namespace?: string;
};

export type Authenticated = {
  readonly namespace: string;
  /** The path's object name: the cluster, or the Restore or Backup asked about. */
  readonly name: string;
  readonly id: string;
  /** The raw body: what was signed. */
  readonly body: Uint8Array;
};

/**
 * What every /v1 route checks first, cheapest first: the path, the signature headers and the
 * timestamp (no Secret is read for a request that fails those), the namespace's key and the
 * signature, then the namespace's rate limit (only signed requests spend it).
 */
export const authenticate = async (d: AuthDeps, c: Ctx): Promise<Authenticated> => {
  const ns = zNamespaceName.safeParse(c.req.param('namespace'));
  if (!ns.success) throw new WebhookError('InvalidPath', `namespace: ${ns.error.issues[0]?.message}`);
  const namespace = ns.data;
  const name = zObjectName.safeParse(c.req.param('name'));
  if (!name.success)
    throw new WebhookError(
      'InvalidPath',
      'name: must be a Kubernetes object name (lower-case, digits, - and .)',
    );
  if (d.namespace && namespace !== d.namespace)
    throw new WebhookError('NamespaceNotServed', `this webhook serves namespace ${d.namespace} only`);
  c.set('namespace', namespace);
  const signed = parseSignatureHeaders(
    {
      id: c.req.header('webhook-id'),
      timestamp: c.req.header('webhook-timestamp'),
      signature: c.req.header('webhook-signature'),
    },
    Math.floor(d.now() / 1000),
  );
  if (!signed.ok) throw new WebhookError(signed.code, signed.message);
  const body = await c.req.arrayBuffer().then(
    (b) => new Uint8Array(b),
    (error: unknown) => {
      if (error instanceof WebhookError) throw error; // over the size limit
      throw incompleteBody(error);
    },
  );
  const key = await d.keys.key(namespace, d.now());
  let ok = signedWith(signed, body, key);
  if (!ok) {
    const fresh = await d.keys.refresh(namespace, d.now());
    ok = fresh !== undefined && !fresh.equals(key) && signedWith(signed, body, fresh);
  }
  if (!ok) throw new WebhookError('BadSignature', 'no signature in webhook-signature matches');
  c.set('webhookId', signed.id);
  // A captured request replayed from many addresses is one id: it runs dry on its own bucket.
  const again = d.limits.id.take(`${namespace}/${signed.id}`, d.now());
  if (again !== undefined) {
    d.metrics.inc('tideway_webhook_rate_limited_total', { scope: 'id' });
    throw new WebhookError('RateLimited', `too many requests with webhook-id ${signed.id}; slow down`, {
      retryAfter: again,
    });
  }
  const wait = d.limits.namespace.take(namespace, d.now());
  if (wait !== undefined) {
    d.metrics.inc('tideway_webhook_rate_limited_total', { scope: 'namespace' });
    throw new WebhookError('RateLimited', `too many requests for namespace ${namespace}; slow down`, {
      retryAfter: wait,
    });
  }
  return { namespace, name: name.data, id: signed.id, body };
};
