import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.ts';
import { startOpsServer } from './ops-server.ts';

describe('ops server', () => {
  it("serves a service's routes mounted after it started, and keeps its own first", async () => {
    const ops = await startOpsServer({ metrics: createMetrics({}), ready: () => true });
    try {
      // A request before the mount: Hono's router is fixed from here on.
      expect((await fetch(`${ops.url}/lag/x`)).status).toBe(404);
      ops.mount(
        new Hono()
          .get('/lag/:c', (c) => c.json({ c: c.req.param('c') }))
          .get('/healthz', (c) => c.text('theirs')),
      );
      expect(await (await fetch(`${ops.url}/lag/x`)).json()).toEqual({ c: 'x' });
      expect(await (await fetch(`${ops.url}/healthz`)).text()).toBe('ok');
      expect((await fetch(`${ops.url}/nothing`)).status).toBe(404);
    } finally {
      await ops.close();
    }
  });
});
