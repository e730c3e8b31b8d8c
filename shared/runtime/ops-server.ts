import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Metrics } from './metrics.ts';

export type OpsServer = { readonly url: string; close(): Promise<void> };

/**
 * Per-process operations endpoints: /metrics (Prometheus), /healthz (the process lives),
 * /readyz (its dependencies are reachable). Port 0 picks a free one.
 */
export const startOpsServer = async (o: {
  metrics: Metrics;
  ready: () => boolean;
  port?: number;
  hostname?: string;
}): Promise<OpsServer> => {
  const app = new Hono();
  app.get('/metrics', (c) =>
    c.text(o.metrics.render(), 200, { 'content-type': 'text/plain; version=0.0.4' }),
  );
  app.get('/healthz', (c) => c.text('ok'));
  app.get('/readyz', (c) => (o.ready() ? c.text('ok') : c.text('not ready', 503)));
  const hostname = o.hostname ?? '127.0.0.1';
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname, port: o.port ?? 0 }, (info) => {
      resolve({
        url: `http://${hostname}:${info.port}`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
};
