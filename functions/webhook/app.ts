import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { TIDEWAY_KINDS } from '../../shared/kube/resources.ts';
import type { Logger } from '../../shared/runtime/logger.ts';
import { type AuthDeps, authenticate } from './auth.ts';
import { type Ctx, type Env, nodePeer } from './context.ts';
import { type ErrorCode, errorBody, incompleteBody, WebhookError } from './errors.ts';
import { backupIntent, type Intent, restoreIntent } from './intent.ts';
import type { Kind, WebhookKube } from './kube.ts';
import type { Mutex } from './mutex.ts';
import { type RateLimiter, sourceKey } from './rate-limit.ts';
import { parseRequest, REQUEST_TYPES } from './request.ts';
import { type Requester, submit } from './submit.ts';

export type AppDeps = AuthDeps & {
  readonly kube: WebhookKube;
  readonly mutex: Mutex;
  readonly log: Logger;
  readonly limits: { readonly source: RateLimiter };
  readonly maxBodyBytes: number;
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

const statusPath = (kind: Kind, namespace: string, name: string) =>
  `/v1/namespaces/${namespace}/${TIDEWAY_KINDS[kind].plural}/${name}`;

/**
 * The webhook's HTTP API (hono): Standard Webhooks signatures, plain JSON or CloudEvents bodies,
 * and unauthenticated /healthz, /readyz, /metrics, /openapi.json. Every error is JSON
 * `{"error":{"code","message"}}`; nothing secret is ever in a response or a log line.
 */
export const createApp = (d: AppDeps) => {
  const peerOf = d.peerOf ?? nodePeer;
  const app = new Hono<Env>();
  const limitBody = bodyLimit({
    maxSize: d.maxBodyBytes,
    onError: () => {
      throw new WebhookError('BodyTooLarge', `the body is larger than ${d.maxBodyBytes} bytes`);
    },
  });
  let readyAt = 0;
  let readyWas = false;
  let checking: Promise<void> | undefined;

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
    // Checked at most every 2 s, and once for all probes that come meanwhile: probes (anyone may
    // send them) must not turn into API server load.
    if (d.now() - readyAt > 2000)
      checking ??= d
        .ready()
        .catch(() => false)
        .then((ok) => {
          readyWas = ok;
          readyAt = d.now();
          checking = undefined;
        });
    if (checking) await checking;
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
    async (c, next) => {
      // A body without a length is read here, as it comes; the sender may go away meanwhile — its
      // doing, not a server failure to alert on. (Errors of later handlers never reach this.)
      try {
        await limitBody(c, next);
      } catch (error) {
        // Only the body stream's own failures: anything else (not an Error) is not ours to name.
        if (error instanceof WebhookError || !(error instanceof Error)) throw error;
        throw incompleteBody(error);
      }
    },
  );

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
      const v = await authenticate(d, c);
      // A status GET signs an empty body, and its id makes nothing: its headers, replayed, must
      // not make an object here (a backup's `{}` is never empty).
      if (v.body.length === 0)
        throw new WebhookError(
          'InvalidBody',
          `the body must be JSON (${kind === 'Backup' ? '{}' : '{"backup":"<name>"} or {"latest":true}'}); an empty body is refused, as signed status requests have one`,
        );
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
    const v = await authenticate(d, c);
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
