import { Agent, request } from 'node:https';
import type { KubeConnection } from './connection.ts';

/** The API server answered with an error status. 410 means "relist". */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  /** HTTP status; `code` too, as client-node's errors have it (shared/kube/errors.ts reads it). */
  readonly status: number;
  readonly code: number;
  readonly retry: boolean;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
    this.code = status;
    this.retry = status >= 500 || status === 429 || status === 410 || status === 409;
  }
}

export type WatchEvent<T> = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: T };

/** The few calls the watcher makes, without @kubernetes/client-node's generated API (~90 MiB RSS). */
export type KubeHttp = {
  request<T>(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    o?: { query?: Record<string, string | undefined>; body?: unknown; timeoutMs?: number },
  ): Promise<T>;
  /** A watch stream: one call per event; resolves when the server closes it, rejects on error or abort. */
  watch<T>(
    path: string,
    query: Record<string, string | undefined>,
    onEvent: (e: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void>;
};

export const kubeHttp = (c: KubeConnection): KubeHttp => {
  const agent = new Agent({
    keepAlive: true,
    ...(c.ca ? { ca: c.ca } : {}),
    ...(c.cert ? { cert: c.cert } : {}),
    ...(c.key ? { key: c.key } : {}),
    rejectUnauthorized: !c.insecureSkipTLSVerify,
  });
  const urlOf = (path: string, query: Record<string, string | undefined> = {}) => {
    const url = new URL(c.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, v);
    return url;
  };
  const headers = (extra: Record<string, string> = {}) => ({
    accept: 'application/json',
    ...(c.token ? { authorization: `Bearer ${c.token()}` } : {}),
    ...extra,
  });

  return {
    request: (method, path, o = {}) =>
      new Promise((resolve, reject) => {
        const body = o.body === undefined ? undefined : JSON.stringify(o.body);
        const req = request(
          urlOf(path, o.query),
          {
            method,
            agent,
            headers: headers(body ? { 'content-type': 'application/json' } : {}),
            timeout: o.timeoutMs ?? 60_000,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (d: Buffer) => chunks.push(d));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              const status = res.statusCode ?? 0;
              if (status >= 400)
                reject(new ApiStatusError(status, `${method} ${path}: ${status} ${text.slice(0, 300)}`));
              else {
                try {
                  resolve(JSON.parse(text));
                } catch (error) {
                  reject(error);
                }
              }
            });
            res.on('error', reject);
          },
        );
        req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
        req.on('error', reject);
        req.end(body);
      }),

    watch: (path, query, onEvent, signal) =>
      new Promise((resolve, reject) => {
        const req = request(
          urlOf(path, { ...query, watch: 'true' }),
          { method: 'GET', agent, headers: headers(), signal },
          (res) => {
            const status = res.statusCode ?? 0;
            if (status >= 400) {
              const chunks: Buffer[] = [];
              res.on('data', (d: Buffer) => chunks.push(d));
              res.on('end', () =>
                reject(
                  new ApiStatusError(
                    status,
                    `watch ${path}: ${status} ${Buffer.concat(chunks).toString().slice(0, 300)}`,
                  ),
                ),
              );
              return;
            }
            // Newline-delimited JSON; an event may span chunks.
            let rest = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              rest += d;
              let nl = rest.indexOf('\n');
              while (nl >= 0) {
                const line = rest.slice(0, nl).trim();
                rest = rest.slice(nl + 1);
                if (line) {
                  try {
                    onEvent(JSON.parse(line));
                  } catch (error) {
                    req.destroy(error as Error);
                    return;
                  }
                }
                nl = rest.indexOf('\n');
              }
            });
            res.on('end', () => resolve());
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end();
      }),
  };
};
