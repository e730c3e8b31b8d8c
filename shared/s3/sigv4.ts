import { createHash, createHmac } from 'node:crypto';

/*
 * AWS Signature Version 4 for S3 requests (header form), as AWS documents it: a canonical request
 * of method, path, sorted query, signed headers and the payload's SHA-256 (or UNSIGNED-PAYLOAD),
 * hashed into a string to sign under a key derived from the secret, the day, region and service.
 */

export type Credentials = { accessKeyId: string; secretAccessKey: string };

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/** RFC 3986 encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ is %XX. */
export const uriEncode = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** An object key as a path: each segment encoded once, the slashes kept (S3 never double-encodes). */
export const encodePath = (path: string): string => path.split('/').map(uriEncode).join('/');

export const canonicalQuery = (query: Record<string, string>): string =>
  Object.entries(query)
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s).digest();

/** `20130524T000000Z` */
export const amzDate = (d: Date): string =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/**
 * Signs a request: returns the headers to send, with `x-amz-date`, `x-amz-content-sha256` and
 * `authorization` added. `path` is already encoded (as sent on the wire); every header given is
 * signed (names lower-cased). The derived key is cached per day.
 */
export const signer = (o: { credentials: Credentials; region: string; service?: string }) => {
  const service = o.service ?? 's3';
  let cached: { day: string; key: Buffer } | undefined;
  const keyFor = (day: string) => {
    if (cached?.day !== day) {
      const k = hmac(
        hmac(hmac(hmac(`AWS4${o.credentials.secretAccessKey}`, day), o.region), service),
        'aws4_request',
      );
      cached = { day, key: k };
    }
    return cached.key;
  };
  return (r: {
    method: string;
    path: string;
    query: Record<string, string>;
    headers: Record<string, string>;
    payloadHash: string;
    date: Date;
  }): Record<string, string> => {
    const stamp = amzDate(r.date);
    const day = stamp.slice(0, 8);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.headers)) headers[k.toLowerCase()] = v;
    headers['x-amz-date'] = stamp;
    headers['x-amz-content-sha256'] = r.payloadHash;
    const names = Object.keys(headers).sort();
    const canonical = [
      r.method,
      r.path,
      canonicalQuery(r.query),
      ...names.map((n) => `${n}:${String(headers[n]).trim().replace(/\s+/g, ' ')}`),
      '',
      names.join(';'),
      r.payloadHash,
    ].join('\n');
    const scope = `${day}/${o.region}/${service}/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonical)].join('\n');
    const signature = createHmac('sha256', keyFor(day)).update(toSign).digest('hex');
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${o.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
    return headers;
  };
};
