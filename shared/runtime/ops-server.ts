import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Metrics } from './metrics.ts';

export type OpsServer = {
  readonly url: string;
  /** Serves `routes` too, from now on (a service's, known once it started). */
  mount(routes: Hono): void;
  close(): Promise<void>;
};

/**
 * Per-process operations endpoints: /metrics (Prometheus), /healthz (the process lives),
 * /readyz (its dependencies are reachable), and what a service mounts. Port 0 picks a free one.
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
  // Routes added after the server started: Hono's router is fixed once it served a request.
  let mounted: Hono | undefined;
  app.all('*', (c) => (mounted ? mounted.fetch(c.req.raw) : c.notFound()));
  const hostname = o.hostname ?? '127.0.0.1';
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname, port: o.port ?? 0 }, (info) => {
      resolve({
        url: `http://${hostname}:${info.port}`,
        mount: (routes) => {
          mounted = routes;
        },
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
};
