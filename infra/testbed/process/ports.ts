import { createServer } from 'node:net';

const tryListen = (port: number, host: string): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });

/** Ports this process handed out: two servers started at once never get the same one. */
const handedOut = new Set<number>();

/**
 * A free TCP port for a server to listen on, from 20000-29999: below the kernel's ephemeral range
 * (32768+), where outgoing connections (the API server's to etcd, say) take their local ports, so
 * none can grab it between this check and the server's bind; and below the NodePort range.
 */
export const freePort = async (host = '127.0.0.1'): Promise<number> => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await tryListen(port, host)) return port;
  }
  throw new Error(`no free port on ${host} in 20000-29999`);
};

/** Resolves true once something accepts TCP connections at host:port. */
export const canConnect = (host: string, port: number, timeoutMs = 1000): Promise<boolean> =>
  new Promise((resolve) => {
    import('node:net').then(({ connect }) => {
      const socket = connect({ host, port });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(timeoutMs, () => done(false));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
  });
