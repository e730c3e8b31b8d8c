import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** The API server answered with an error status. 410 means "relist". */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  readonly status: number;
  readonly retry: boolean;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
    this.retry = status >= 500 || status === 429 || status === 410;
  }
}

/** GET a JSON document from the API server with the kubeconfig's credentials. */
export const apiGet = async <T>(
  kc: KubeConfig,
  path: string,
  query: Record<string, string | undefined>,
): Promise<T> => {
  const server = kc.getCurrentCluster()?.server ?? '';
  const url = new URL(server + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, v);
  const opts: import('node:https').RequestOptions = {
    method: 'GET',
    headers: { accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise<T>((resolve, reject) => {
    const req = request(url, { ...opts, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 0) >= 400)
          reject(
            new ApiStatusError(res.statusCode ?? 0, `GET ${path}: ${res.statusCode} ${body.slice(0, 300)}`),
          );
        else resolve(JSON.parse(body) as T);
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
};
