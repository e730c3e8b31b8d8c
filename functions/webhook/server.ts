import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';

export type Listening = { readonly url: string; close(): Promise<void> };

/**
 * Serves `fetch` on host:port. SO_REUSEPORT: replicas on one host (`npm start` runs two) share
 * the port and the kernel spreads connections over them; in a cluster each pod has its own.
 * Short header and request timeouts: a slow sender cannot hold connections open.
 */
export const listen = (
  fetch: (request: Request, env: unknown) => Response | Promise<Response>,
  o: { host: string; port: number },
): Promise<Listening> =>
  new Promise((resolve, reject) => {
    const server = createAdaptorServer({ fetch }) as Server;
    server.headersTimeout = 5000;
    server.requestTimeout = 10_000;
    server.keepAliveTimeout = 5000;
    server.once('error', reject);
    server.listen({ host: o.host, port: o.port, reusePort: true }, () => {
      server.off('error', reject);
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : o.port;
      const host = o.host.includes(':') ? `[${o.host}]` : o.host;
      resolve({
        url: `http://${host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            // In-flight requests finish; idle keep-alive connections go now, stragglers after 10 s.
            const force = setTimeout(() => server.closeAllConnections(), 10_000);
            server.close(() => {
              clearTimeout(force);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
