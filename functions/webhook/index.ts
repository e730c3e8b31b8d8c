import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { loadKubeConnection } from '../../shared/kube/lite/connection.ts';
import { kubeHttp } from '../../shared/kube/lite/http.ts';
import { zNamespaceName } from '../../shared/kube/names.ts';
import type { Service } from '../../shared/runtime/handler.ts';
import { objectLocks } from '../../shared/runtime/object-lock.ts';
import { createApp } from './app.ts';
import { liteWebhookKube } from './kube.ts';
import { busMutex } from './mutex.ts';
import { PER_ID, tokenBuckets } from './rate-limit.ts';
import { secretKeys } from './secrets.ts';
import { listen } from './server.ts';

const perSecond = z.coerce.number().positive().max(100_000);
/** The webhook's settings, from its environment. */
export const zWebhookEnv = z.object({
  TIDEWAY_WEBHOOK_HOST: z.string().min(1).default('0.0.0.0'),
  TIDEWAY_WEBHOOK_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Requests are a few hundred bytes; anything much larger is not one of ours. */
  TIDEWAY_WEBHOOK_MAX_BODY_BYTES: z.coerce.number().int().min(256).max(1_048_576).default(16_384),
  /** Per source address (IPv6: per /64), per replica. */
  TIDEWAY_WEBHOOK_SOURCE_RATE: perSecond.default(10),
  /** At least 1: a bucket that never holds a whole token refuses everything. */
  TIDEWAY_WEBHOOK_SOURCE_BURST: z.coerce.number().min(1).max(100_000).default(40),
  /** Per namespace, counting signed requests only (unsigned floods cannot starve a namespace), per replica. */
  TIDEWAY_WEBHOOK_NAMESPACE_RATE: perSecond.default(5),
  TIDEWAY_WEBHOOK_NAMESPACE_BURST: z.coerce.number().min(1).max(100_000).default(20),
  /** Per namespace and webhook-id, before the namespace's: a replayed request spends its own. */
  TIDEWAY_WEBHOOK_ID_RATE: perSecond.default(PER_ID.rate),
  TIDEWAY_WEBHOOK_ID_BURST: z.coerce.number().min(1).max(100_000).default(PER_ID.burst),
  TIDEWAY_WATCH_NAMESPACE: zNamespaceName.optional(),
});

export const OPENAPI_FILE = new URL('./openapi.json', import.meta.url);

/** The `webhook` function of serverless.yml: an HTTP server that turns signed requests into objects. */
export const start: Service = async (ctx) => {
  const parsed = zWebhookEnv.safeParse(ctx.env);
  if (!parsed.success)
    throw new Error(
      `webhook: bad environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  // Its own small client, as the watcher: a few calls, without client-node's generated API.
  const kube = liteWebhookKube(kubeHttp(loadKubeConnection(ctx.env)));
  const locks = await objectLocks(ctx.bus, { owner: `${hostname()}/${process.pid}` });
  const app = createApp({
    kube,
    keys: secretKeys(kube),
    mutex: busMutex(locks),
    log: ctx.log,
    metrics: ctx.metrics,
    now: () => ctx.clock().getTime(),
    limits: {
      source: tokenBuckets({ rate: e.TIDEWAY_WEBHOOK_SOURCE_RATE, burst: e.TIDEWAY_WEBHOOK_SOURCE_BURST }),
      namespace: tokenBuckets({
        rate: e.TIDEWAY_WEBHOOK_NAMESPACE_RATE,
        burst: e.TIDEWAY_WEBHOOK_NAMESPACE_BURST,
      }),
      id: tokenBuckets({ rate: e.TIDEWAY_WEBHOOK_ID_RATE, burst: e.TIDEWAY_WEBHOOK_ID_BURST }),
    },
    maxBodyBytes: e.TIDEWAY_WEBHOOK_MAX_BODY_BYTES,
    ...(e.TIDEWAY_WATCH_NAMESPACE ? { namespace: e.TIDEWAY_WATCH_NAMESPACE } : {}),
    ready: async () => !ctx.bus.nc.isClosed() && (await kube.ready()),
    openapi: JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')),
  });
  const server = await listen(app.fetch, { host: e.TIDEWAY_WEBHOOK_HOST, port: e.TIDEWAY_WEBHOOK_PORT });
  ctx.log.info('webhook listening', { url: server.url });
  return { stop: () => server.close() };
};
