import { Agent, request } from 'node:https';
import { loadKubeConnection } from '../shared/kube/lite/connection.ts';

/**
 * The event path's load: merge patches over keep-alive connections at little CPU per request, so
 * that the API server, not the load generator, sets the pace on a small machine. As many sockets
 * as the bench has senders: a request never waits in the agent's queue after its start time.
 */
export const patcher = (kubeconfig: string, sockets = 128) => {
  const c = loadKubeConnection({ KUBECONFIG: kubeconfig });
  const agent = new Agent({
    keepAlive: true,
    maxSockets: sockets,
    ...(c.ca ? { ca: c.ca } : {}),
    ...(c.cert ? { cert: c.cert } : {}),
    ...(c.key ? { key: c.key } : {}),
  });
  return {
    /** Merge-patches the object at `path`; resolves to its new resourceVersion. */
    patch: (path: string, body: unknown) =>
      new Promise<string>((resolve, reject) => {
        const req = request(
          new URL(c.server + path),
          {
            method: 'PATCH',
            agent,
            headers: {
              accept: 'application/json',
              'content-type': 'application/merge-patch+json',
              ...(c.token ? { authorization: `Bearer ${c.token()}` } : {}),
            },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              text += d;
            });
            res.on('end', () => {
              if ((res.statusCode ?? 0) >= 400) reject(new Error(`PATCH ${path}: ${res.statusCode} ${text}`));
              else
                resolve(
                  (JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
                );
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      }),
    close: () => agent.destroy(),
  };
};
