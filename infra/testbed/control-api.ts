import { randomBytes, timingSafeEqual } from 'node:crypto';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { z } from 'zod';
import { freePort } from './process/ports.ts';
import type { ComponentName, Faults } from './types.ts';

const COMPONENTS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kube-proxy',
  'nats',
  's3',
  'redis',
] as const satisfies readonly ComponentName[];
const zComponent = z.enum(COMPONENTS);
const zAction = z.enum(['start', 'stop', 'kill', 'restart']);

export type ControlApi = { readonly url: string; readonly token: string; close(): Promise<void> };

/**
 * Fault injection over HTTP on 127.0.0.1: tests run in worker processes, the test bed in the
 * global setup, so faults cross a process boundary. Bearer token, loopback only.
 */
export const controlApp = (faults: Faults, token: string): Hono => {
  const app = new Hono();
  app.use(async (c, next) => {
    const given = Buffer.from(c.req.header('authorization') ?? '');
    const want = Buffer.from(`Bearer ${token}`);
    if (given.length !== want.length || !timingSafeEqual(given, want)) {
      return c.json({ error: { code: 'unauthorized', message: 'missing or bad bearer token' } }, 401);
    }
    await next();
  });
  app.post('/pods/:namespace/:name/hold-down', async (c) => {
    await faults.holdDownPod(c.req.param('namespace'), c.req.param('name'));
    return c.body(null, 204);
  });
  app.post('/pods/:namespace/:name/release', async (c) => {
    await faults.releasePod(c.req.param('namespace'), c.req.param('name'));
    return c.body(null, 204);
  });
  app.post('/pods/:namespace/:name/kill', async (c) => {
    await faults.killContainer(c.req.param('namespace'), c.req.param('name'), c.req.query('container'));
    return c.body(null, 204);
  });
  app.get('/pods/:namespace/:name/pids', (c) =>
    c.json(faults.containerPids(c.req.param('namespace'), c.req.param('name'))),
  );
  app.post('/components/:name/:action', async (c) => {
    const name = zComponent.safeParse(c.req.param('name'));
    const action = zAction.safeParse(c.req.param('action'));
    if (!name.success || !action.success) {
      return c.json(
        {
          error: {
            code: 'bad_request',
            message: `components: ${COMPONENTS.join(', ')}; actions: start, stop, kill, restart`,
          },
        },
        400,
      );
    }
    await faults.component(name.data)[action.data]();
    return c.body(null, 204);
  });
  app.onError((error, c) => c.json({ error: { code: 'failed', message: error.message } }, 500));
  return app;
};

export const startControlApi = async (faults: Faults): Promise<ControlApi> => {
  const token = randomBytes(24).toString('base64url');
  const port = await freePort();
  const server = serve({ fetch: controlApp(faults, token).fetch, hostname: '127.0.0.1', port });
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

/** Client side of the control API, for tests in worker processes. */
export const controlClient = (info: { controlUrl: string; controlToken: string }) => {
  const post = async (path: string) => {
    const res = await fetch(`${info.controlUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${info.controlToken}` },
    });
    if (!res.ok) throw new Error(`control API ${path}: ${res.status} ${await res.text()}`);
  };
  const pod = (ns: string, name: string) => `/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
  return {
    holdDownPod: (ns: string, name: string) => post(`${pod(ns, name)}/hold-down`),
    releasePod: (ns: string, name: string) => post(`${pod(ns, name)}/release`),
    killContainer: (ns: string, name: string, container?: string) =>
      post(`${pod(ns, name)}/kill${container ? `?container=${encodeURIComponent(container)}` : ''}`),
    containerPids: async (ns: string, name: string): Promise<Record<string, number>> => {
      const res = await fetch(`${info.controlUrl}${pod(ns, name)}/pids`, {
        headers: { authorization: `Bearer ${info.controlToken}` },
      });
      if (!res.ok) throw new Error(`control API pids: ${res.status} ${await res.text()}`);
      return (await res.json()) as Record<string, number>;
    },
    component: (name: ComponentName, action: 'start' | 'stop' | 'kill' | 'restart') =>
      post(`/components/${name}/${action}`),
  };
};
