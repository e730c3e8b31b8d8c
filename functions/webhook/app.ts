import type { IncomingMessage } from 'node:http';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { zNamespaceName } from '../../shared/kube/names.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import type { Metrics } from '../../shared/runtime/metrics.ts';
import { ERROR_STATUS, type ErrorCode, errorBody, WebhookError } from './errors.ts';
import { backupIntent, type Intent, restoreIntent, zObjectName } from './intent.ts';
import type { Kind, WebhookKube } from './kube.ts';
import type { Mutex } from './mutex.ts';
import type { RateLimiter } from './rate-limit.ts';
import { sourceKey } from './rate-limit.ts';
import { parseRequest, REQUEST_TYPES } from './request.ts';
import type { SecretKeys } from './secrets.ts';
import { parseSignatureHeaders, signedWith } from './signature.ts';
import { type Requester, submit } from './submit.ts';

export type AppDeps = {
  readonly kube: WebhookKube;
  readonly keys: SecretKeys;
  readonly mutex: Mutex;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  readonly limits: { readonly source: RateLimiter; readonly namespace: RateLimiter };
  readonly maxBodyBytes: number;
  /** Serve only this namespace (TIDEWAY_WATCH_NAMESPACE). */
  readonly namespace?: string;
  /** The TCP peer of a request; default: the Node socket's remote address. */
  readonly peerOf?: (c: Context) => string | undefined;
  readonly ready: () => Promise<boolean>;
  readonly openapi: unknown;
};

/** Routes, in hono's syntax; the OpenAPI document lists exactly these (openapi.test.ts). */
export const ROUTES = {
  restore: '/v1/namespaces/:namespace/redisclusters/:name/restore',
  backup: '/v1/namespaces/:namespace/redisclusters/:name/backup',
  restoreStatus: '/v1/namespaces/:namespace/restores/:name',
  backupStatus: '/v1/namespaces/:namespace/backups/:name',
} as const;

const PLURAL: Record<Kind, string> = {
  Restore: 'restores',
  Backup: 'backups',
  RedisCluster: 'redisclusters',
  BackupSchedule: 'backupschedules',
};
const statusPath = (kind: Kind, namespace: string, name: string) =>
  `/v1/namespaces/${namespace}/${PLURAL[kind]}/${name}`;

/** What a request carries between middleware and handlers (for the access log). */
type Env = { Variables: { code: ErrorCode; namespace: string; webhookId: string } };
type Ctx = Context<Env>;

const nodePeer = (c: Context) =>
  (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress;

/**
 * The webhook's HTTP API (hono): Standard Webhooks signatures, plain JSON or CloudEvents bodies,
 * and unauthenticated /healthz, /readyz, /metrics, /openapi.json. Every error is JSON
 * `{"error":{"code","message"}}`; nothing secret is ever in a response or a log line.
 */
export const createApp = (d: AppDeps) => {
  const peerOf = d.peerOf ?? nodePeer;
  const app = new Hono<Env>();
  let readyAt = 0;
  let readyWas = false;

  const fail = (c: Ctx, e: WebhookError) => {
    c.set('code', e.code);
    if (e.retryAfter !== undefined) c.header('retry-after', String(e.retryAfter));
    c.header('cache-control', 'no-store');
    return c.json(errorBody(e.code, e.message), e.status);
  };

  app.onError((error, c) => {
    if (error instanceof WebhookError) return fail(c, error);
    // The API server or the bus away (timeouts, 5xx, 429): ours to fix, the caller's to retry.
    const status = (error as { status?: unknown }).status;
    const temporary = typeof status !== 'number' || status >= 500 || status === 429;
    d.log.error('request failed', { error, route: c.req.routePath });
    return fail(
      c,
      temporary
        ? new WebhookError('Unavailable', 'Kubernetes did not answer; retry', { retryAfter: 2 })
        : new WebhookError('Internal', 'the webhook failed to handle the request; see its log'),
    );
  });
  app.notFound((c) =>
    fail(c, new WebhookError('NotFound', `no endpoint ${c.req.method} ${c.req.path.slice(0, 200)}`)),
  );

  // Access log and metrics, for every request.
  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    const route = c.req.routePath;
    const code: ErrorCode | 'OK' = (c.get('code') as ErrorCode | undefined) ?? 'OK';
    const seconds = (performance.now() - started) / 1000;
    d.metrics.inc('tideway_webhook_requests_total', { route, status: String(c.res.status), code });
    d.metrics.observe('tideway_webhook_request_duration_seconds', seconds, { route });
    if (route.startsWith('/v1/') || code !== 'OK')
      (c.res.status >= 500 ? d.log.error : d.log.info)('request', {
        method: c.req.method,
        route,
        status: c.res.status,
        code,
        namespace: c.get('namespace'),
        webhookId: c.get('webhookId'),
        peer: peerOf(c),
        ms: Math.round(seconds * 1000),
      });
  });

  app.get('/healthz', (c) => c.text('ok'));
  app.get('/readyz', async (c) => {
    // Checked at most every 2 s: probes must not turn into API server load.
    if (d.now() - readyAt > 2000) {
      readyWas = await d.ready();
      readyAt = d.now();
    }
    return readyWas ? c.text('ok') : c.text('not ready', 503);
  });
  app.get('/metrics', (c) =>
    c.text(d.metrics.render(), 200, { 'content-type': 'text/plain; version=0.0.4' }),
  );
  app.get('/openapi.json', (c) => c.json(d.openapi as object));

  app.use(
    '/v1/*',
    async (c, next) => {
      const wait = d.limits.source.take(sourceKey(peerOf(c)), d.now());
      if (wait !== undefined) {
        d.metrics.inc('tideway_webhook_rate_limited_total', { scope: 'source' });
        throw new WebhookError('RateLimited', 'too many requests from this address; slow down', {
          retryAfter: wait,
        });
      }
      await next();
    },
    bodyLimit({
      maxSize: d.maxBodyBytes,
      onError: () => {
        throw new WebhookError('BodyTooLarge', `the body is larger than ${d.maxBodyBytes} bytes`);
      },
    }),
  );

  /** Path parameters, the signature and the namespace's rate limit: what every /v1 route needs. */
  const verified = async (c: Ctx) => {
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
    const body = new Uint8Array(await c.req.arrayBuffer());
    const key = await d.keys.key(namespace, d.now());
    let ok = signedWith(signed, body, key);
    if (!ok) {
      const fresh = await d.keys.refresh(namespace, d.now());
      ok = fresh !== undefined && !fresh.equals(key) && signedWith(signed, body, fresh);
    }
    if (!ok) throw new WebhookError('BadSignature', 'no signature in webhook-signature matches');
    c.set('webhookId', signed.id);
    const wait = d.limits.namespace.take(namespace, d.now());
    if (wait !== undefined) {
      d.metrics.inc('tideway_webhook_rate_limited_total', { scope: 'namespace' });
      throw new WebhookError('RateLimited', `too many requests for namespace ${namespace}; slow down`, {
        retryAfter: wait,
      });
    }
    return { namespace, name: name.data, id: signed.id, body };
  };

  const requester = (c: Ctx, id: string, cloudEvent: Requester['cloudEvent']): Requester => ({
    webhookId: id,
    peer: peerOf(c) ?? 'unknown',
    receivedAt: new Date(d.now()),
    ...(c.req.header('user-agent') ? { userAgent: c.req.header('user-agent') } : {}),
    ...(cloudEvent ? { cloudEvent } : {}),
  });

  const intentRoute =
    (kind: 'Restore' | 'Backup', toIntent: (ns: string, cluster: string, data: unknown) => Intent) =>
    async (c: Ctx) => {
      const v = await verified(c);
      const parsed = parseRequest(c.req.raw.headers, v.body, REQUEST_TYPES[kind]);
      const intent = toIntent(v.namespace, v.name, parsed.data);
      const s = await submit(intent, requester(c, v.id, parsed.cloudEvent), d);
      d.metrics.inc(s.replayed ? 'tideway_webhook_replays_total' : 'tideway_webhook_objects_created_total', {
        kind,
      });
      const status = statusPath(kind, s.namespace, s.name);
      c.header('location', status);
      c.header('cache-control', 'no-store');
      if (s.replayed) c.header('idempotent-replayed', 'true');
      return c.json({ [kind.toLowerCase()]: { namespace: s.namespace, name: s.name }, status }, 202);
    };

  const statusRoute = (kind: 'Restore' | 'Backup') => async (c: Ctx) => {
    const v = await verified(c);
    const o = (await d.kube.get(kind, v.namespace, v.name)) as
      | { spec?: { cluster?: { name?: string } }; status?: unknown }
      | undefined;
    if (o === undefined)
      throw new WebhookError(
        kind === 'Restore' ? 'RestoreNotFound' : 'BackupNotFound',
        `no ${kind} ${v.name} in namespace ${v.namespace}`,
      );
    c.header('cache-control', 'no-store');
    return c.json({
      [kind.toLowerCase()]: { namespace: v.namespace, name: v.name },
      cluster: o.spec?.cluster?.name ?? null,
      status: o.status ?? {},
    });
  };

  app.post(ROUTES.restore, intentRoute('Restore', restoreIntent));
  app.post(ROUTES.backup, intentRoute('Backup', backupIntent));
  app.get(ROUTES.restoreStatus, statusRoute('Restore'));
  app.get(ROUTES.backupStatus, statusRoute('Backup'));
  return app;
};

/** Every error code, for the OpenAPI document. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
