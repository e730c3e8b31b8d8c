import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { EtcdAbortedError, EtcdConnectionError, EtcdProtocolError, EtcdServerError } from './errors.ts';
import { statusOf } from './wire.ts';

/** PEM text or buffers, as they come out of a Kubernetes Secret. */
export type EtcdTls = {
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** The name to expect in the server's certificate when endpoints are addresses it does not list. */
  readonly serverName?: string;
};

export type CallOptions = {
  readonly signal?: AbortSignal;
  /** Request to last byte of the answer, per endpoint tried (a read that fails over starts afresh). */
  readonly timeoutMs?: number;
};

// Connection failures where the request was never written: safe to send to another endpoint
// even when it changes something.
const notSentCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

const staleCodes = new Set(['ECONNRESET', 'EPIPE']);

// Node's and OpenSSL's codes for a handshake or certificate failure.
const isTlsCode = (code: string) =>
  /^(ERR_TLS_|ERR_SSL_)/.test(code) ||
  /^(UNABLE_TO_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH)/.test(code);

const errorBodyLimit = 64 * 1024;

/** Checks and normalizes an endpoint: scheme, host and port, nothing else. */
export const normalizeEndpoint = (endpoint: string): string => {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError(`etcd endpoint ${JSON.stringify(endpoint)} is not a URL (want http(s)://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`etcd endpoint ${endpoint}: scheme must be http or https`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.username)
    throw new TypeError(`etcd endpoint ${endpoint}: only scheme, host and port are allowed`);
  return `${url.protocol}//${url.host}`;
};

/** HTTP/1.1 to the gateway, keep-alive, one agent per scheme. */
export class GatewayHttp {
  readonly #http = new HttpAgent({ keepAlive: true });
  readonly #https: HttpsAgent;
  readonly #tls: EtcdTls;
  readonly #maxResponseBytes: number;

  constructor(o: { tls?: EtcdTls; maxResponseBytes?: number } = {}) {
    this.#tls = o.tls ?? {};
    this.#https = new HttpsAgent({
      keepAlive: true,
      ...(this.#tls.ca ? { ca: this.#tls.ca } : {}),
      ...(this.#tls.cert ? { cert: this.#tls.cert } : {}),
      ...(this.#tls.key ? { key: this.#tls.key } : {}),
    });
    this.#maxResponseBytes = o.maxResponseBytes ?? 32 * 1024 * 1024;
  }

  /** One unary call: JSON body in, parsed JSON out; gRPC errors become EtcdServerError. */
  async post(endpoint: string, path: string, body: unknown, o: CallOptions & { timeoutMs: number }) {
    const { req, res, done } = await this.#send(endpoint, path, body, o);
    try {
      const text = await readBody(res, this.#maxResponseBytes, endpoint, path);
      if (res.statusCode !== 200) throw errorFromAnswer(res.statusCode ?? 0, text, endpoint, path);
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new EtcdProtocolError(`${path}: ${endpoint} answered non-JSON: ${text.slice(0, 200)}`, {
          endpoint,
          cause: error,
        });
      }
    } catch (error) {
      req.destroy();
      throw done(error);
    } finally {
      done(undefined);
    }
  }

  /**
   * A streaming call: resolves the 200 response, unread, once its headers are in. `timeoutMs`
   * bounds only the wait for the headers; `signal` stays wired to the request until `done`.
   */
  async open(endpoint: string, path: string, body: unknown, o: CallOptions & { timeoutMs: number }) {
    const sent = await this.#send(endpoint, path, body, o, { streaming: true });
    const { req, res, done } = sent;
    if (res.statusCode === 200) return sent;
    try {
      const text = await readBody(res, errorBodyLimit, endpoint, path, true);
      throw errorFromAnswer(res.statusCode ?? 0, text, endpoint, path);
    } catch (error) {
      req.destroy();
      throw done(error);
    }
  }

  close() {
    this.#http.destroy();
    this.#https.destroy();
  }

  #send(
    endpoint: string,
    path: string,
    body: unknown,
    o: CallOptions & { timeoutMs: number },
    mode: { streaming?: boolean } = {},
  ): Promise<{
    req: ClientRequest;
    res: IncomingMessage;
    /** Stops the timer and the signal's hold; maps an error that the abort or timeout caused. */
    done: (error: unknown) => unknown;
  }> {
    const url = new URL(path, endpoint);
    const https = url.protocol === 'https:';
    const payload = Buffer.from(JSON.stringify(body));
    let timedOut = false;
    let aborted = false;
    let headersIn = false;
    let req: ClientRequest | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      req?.destroy();
    }, o.timeoutMs);
    const onAbort = () => {
      aborted = true;
      req?.destroy();
    };
    const release = () => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    };
    const mapError = (error: unknown): unknown => {
      if (aborted)
        return new EtcdAbortedError(`${path} on ${endpoint}: aborted`, { endpoint, cause: o.signal?.reason });
      if (timedOut)
        return new EtcdConnectionError('Timeout', `${path} on ${endpoint}: no answer in ${o.timeoutMs} ms`, {
          endpoint,
        });
      if (error instanceof Error && !('retry' in error)) {
        const code = (error as NodeJS.ErrnoException).code ?? '';
        return new EtcdConnectionError(
          isTlsCode(code) ? 'TLS' : 'Connection',
          `${path} on ${endpoint}: ${error.message}`,
          {
            endpoint,
            cause: error,
            // A kept-alive connection the server had closed (a restarted member) fails at once,
            // before etcd read anything: Node's documented case for sending again.
            notSent: notSentCodes.has(code) || (req?.reusedSocket === true && staleCodes.has(code)),
          },
        );
      }
      return error;
    };
    const done = (error: unknown) => {
      const mapped = error === undefined ? undefined : mapError(error);
      release();
      return mapped;
    };
    return new Promise((resolve, reject) => {
      if (o.signal?.aborted) {
        release();
        reject(new EtcdAbortedError(`${path} on ${endpoint}: aborted`, { endpoint, cause: o.signal.reason }));
        return;
      }
      o.signal?.addEventListener('abort', onAbort, { once: true });
      const options = {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': payload.length,
        },
      };
      req = https
        ? httpsRequest(url, {
            ...options,
            agent: this.#https,
            ...(this.#tls.serverName ? { servername: this.#tls.serverName } : {}),
          })
        : httpRequest(url, { ...options, agent: this.#http });
      const r = req;
      r.on('error', (error) => {
        if (!headersIn) reject(done(error));
      });
      r.on('response', (res) => {
        headersIn = true;
        if (mode.streaming) clearTimeout(timer);
        resolve({ req: r, res, done });
      });
      r.end(payload);
    });
  }
}

const readBody = (
  res: IncomingMessage,
  limit: number,
  endpoint: string,
  path: string,
  truncate = false,
): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        if (truncate) {
          resolve(Buffer.concat(chunks).toString('utf8'));
          res.destroy();
          return;
        }
        res.destroy();
        reject(
          new EtcdProtocolError(`${path}: the answer from ${endpoint} is over ${limit} bytes`, { endpoint }),
        );
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new Error('the connection closed before the answer was complete'));
    });
  });

/** A non-200 answer: etcd's gRPC status when the body carries one. */
export const errorFromAnswer = (status: number, text: string, endpoint: string, path: string): Error => {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const s = statusOf(body);
  if (s) return new EtcdServerError(s.code, s.message, endpoint);
  return new EtcdProtocolError(`${path}: ${endpoint} answered HTTP ${status}: ${text.slice(0, 200)}`, {
    endpoint,
    // A proxy's or a restarting server's 502/503/504 passes.
    retry: status >= 500,
  });
};
