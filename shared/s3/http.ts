import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { isTransient } from './errors.ts';
import {
  type Credentials,
  canonicalQuery,
  EMPTY_SHA256,
  encodePath,
  signer,
  UNSIGNED_PAYLOAD,
} from './sigv4.ts';
import { errorOf } from './xml.ts';

/*
 * S3's REST API over node:http: SigV4-signed requests with keep-alive connections, timeouts and
 * retries with back-off for what may pass. Small on purpose: the AWS SDK costs ~35 MiB of memory
 * and per-request work that a backup process does not need (docs/backup.md, "Benchmark").
 */

/** The server answered with an error: its S3 code (or `Http<status>` without a body) and status. */
export class S3ServiceError extends Error {
  override readonly name = 'S3ServiceError';
  readonly code: string;
  readonly status: number;

  constructor(code: string, status: number, message: string) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/** No answer in time: connecting, or the server silent mid-request. */
export class S3TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  readonly code = 'TimeoutError';
}

export type S3Call = {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'HEAD';
  /** The object's key; undefined for a request on the bucket. */
  key?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer;
  /**
   * Sign `UNSIGNED-PAYLOAD` instead of the body's SHA-256: for bodies an `x-amz-checksum-*`
   * header protects (the server checks it), so the body is not hashed twice more for the signature.
   */
  unsignedPayload?: boolean;
  signal?: AbortSignal | undefined;
};

export type S3Reply = { status: number; headers: IncomingHttpHeaders; body: Buffer };

export type S3HttpConfig = {
  bucket: string;
  region: string;
  /** Empty for AWS. */
  endpoint?: string | undefined;
  forcePathStyle?: boolean | undefined;
  credentials: Credentials;
  /** Tries per request; only transient failures are tried again. */
  maxAttempts: number;
  connectTimeoutMs?: number;
  /** The server silent this long in a request: it failed (retried). */
  requestTimeoutMs?: number;
};

/** Virtual-hosted addressing needs a bucket name that is a DNS label (and no dot under TLS). */
const dnsBucket = (b: string, tls: boolean) =>
  /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(b) || (!tls && /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(b));

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export const s3Http = (c: S3HttpConfig) => {
  const base = new URL(c.endpoint || `https://s3.${c.region}.amazonaws.com`);
  const tls = base.protocol === 'https:';
  const virtual = !c.forcePathStyle && dnsBucket(c.bucket, tls);
  const host = virtual ? `${c.bucket}.${base.host}` : base.host;
  const prefix = base.pathname.replace(/\/$/, '') + (virtual ? '' : `/${encodePath(c.bucket)}`);
  // Loaded so, not imported: an ESM import of node:http(s) also loads TLS, HTTP/2 and undici
  // (~15 MiB more in every process; docs/backup.md, "Benchmark").
  const lib = process.getBuiltinModule(tls ? 'node:https' : 'node:http');
  const agent = new lib.Agent({ keepAlive: true });
  const request = lib.request;
  const sign = signer({ credentials: c.credentials, region: c.region });
  const connectTimeoutMs = c.connectTimeoutMs ?? 5000;
  const requestTimeoutMs = c.requestTimeoutMs ?? 120_000;
  // The server's clock minus ours, learnt from a RequestTimeTooSkewed answer (signatures carry the time).
  let skewMs = 0;

  const once = (call: S3Call, stream: boolean) =>
    new Promise<S3Reply | IncomingMessage>((resolve, reject) => {
      const path = call.key === undefined ? prefix || '/' : `${prefix}/${encodePath(call.key)}`;
      const query = call.query ?? {};
      const body = call.body;
      const headers = sign({
        method: call.method,
        path,
        query,
        headers: {
          host,
          ...(body || call.method === 'PUT' || call.method === 'POST'
            ? { 'content-length': String(body?.length ?? 0) }
            : {}),
          ...call.headers,
        },
        payloadHash: call.unsignedPayload
          ? UNSIGNED_PAYLOAD
          : body?.length
            ? createHash('sha256').update(body).digest('hex')
            : EMPTY_SHA256,
        date: new Date(Date.now() + skewMs),
      });
      const q = canonicalQuery(query);
      const req = request({
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port || undefined,
        method: call.method,
        path: q ? `${path}?${q}` : path,
        headers: { ...headers, host, 'user-agent': 'tideway' },
        agent,
        ...(call.signal ? { signal: call.signal } : {}),
      });
      const connectTimer = setTimeout(
        () => req.destroy(new S3TimeoutError(`${base.host}: no connection in ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
      req.once('socket', (s) => {
        if (!s.connecting) clearTimeout(connectTimer);
        else s.once('connect', () => clearTimeout(connectTimer));
      });
      req.setTimeout(requestTimeoutMs, () =>
        req.destroy(new S3TimeoutError(`${base.host}: no answer in ${requestTimeoutMs / 1000} s`)),
      );
      req.once('error', (e) => {
        clearTimeout(connectTimer);
        reject(e);
      });
      req.once('response', (res) => {
        clearTimeout(connectTimer);
        const status = res.statusCode ?? 0;
        if (stream && status < 300) return resolve(res);
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.once('error', reject);
        res.once('end', () => {
          const text = Buffer.concat(chunks);
          if (status < 300) return resolve({ status, headers: res.headers, body: text });
          const e = errorOf(text.toString('utf8'));
          const code = e?.code ?? (status === 404 ? 'NotFound' : `Http${status}`);
          if (code === 'RequestTimeTooSkewed' && res.headers.date)
            skewMs = Date.parse(res.headers.date) - Date.now();
          reject(new S3ServiceError(code, status, e?.message || `HTTP ${status}`));
        });
      });
      req.end(body);
    });

  /** One request, tried again with full-jitter back-off (100 ms doubling, at most 20 s) while it may pass. */
  const attempt = async <T extends S3Reply | IncomingMessage>(call: S3Call, stream: boolean): Promise<T> => {
    for (let n = 1; ; n++) {
      try {
        return (await once(call, stream)) as T;
      } catch (error) {
        call.signal?.throwIfAborted();
        if (n >= c.maxAttempts || !isTransient(error)) throw error;
        await sleep(Math.random() * Math.min(20_000, 100 * 2 ** n), call.signal);
      }
    }
  };

  return {
    /** The whole answer; an error answer rejects with S3ServiceError. */
    send: (call: S3Call) => attempt<S3Reply>(call, false),
    /** The answer's body as a stream (GET of an object). */
    stream: (call: S3Call) => attempt<IncomingMessage>(call, true),
  };
};
