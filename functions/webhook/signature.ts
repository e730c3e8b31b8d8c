import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks (https://www.standardwebhooks.com) verification: `webhook-signature` holds
 * space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, the key
 * being the base64 part of a `whsec_…` secret.
 */

/** A timestamp further than this from our clock, either way, is refused (replays, skew). */
export const TOLERANCE_SECONDS = 300;

/** The key of a `whsec_<base64>` secret: 24 to 64 bytes, as the spec recommends. */
export const parseSecret = (value: string): Buffer | undefined => {
  const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value.trim());
  if (!m?.[1] || m[1].length % 4 !== 0) return undefined;
  const key = Buffer.from(m[1], 'base64');
  return key.length >= 24 && key.length <= 64 ? key : undefined;
};

/**
 * Ids are opaque to the spec; ours are printable ASCII without `.`, so that "<id>.<timestamp>."
 * splits one way only (an id with a dot could pass another id's signature off with a shifted
 * timestamp and body). Every sender's ids we know of (msg_…, UUIDs, ULIDs) fit.
 */
const ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;
const TIMESTAMP = /^\d{1,12}$/;
// 32 bytes in base64: the 43rd character carries 4 bits and 2 unused ones, which must be zero.
// Decoding alone would take 4 spellings of one signature; Standard Webhooks compares the text, so
// only the canonical one (what every sender's base64 encoder writes) is a signature.
const V1 = /^v1,([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)$/;
const MAX_SIGNATURES = 16;

export type SignatureHeaders = {
  readonly id: string | undefined;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
};

export type SignatureFailure = {
  readonly ok: false;
  readonly code: 'MissingSignature' | 'MalformedSignature' | 'StaleTimestamp' | 'BadSignature';
  readonly message: string;
};

/** Headers that are well-formed and timely: what is left is checking the signatures with the key. */
export type SignedRequest = {
  readonly ok: true;
  readonly id: string;
  readonly timestamp: number;
  /** The header as sent: what was signed (leading zeros included). */
  readonly timestampText: string;
  readonly signatures: readonly Buffer[];
};

export type Verification =
  | { readonly ok: true; readonly id: string; readonly timestamp: number }
  | SignatureFailure;

const fail = (code: SignatureFailure['code'], message: string): SignatureFailure => ({
  ok: false,
  code,
  message,
});

/**
 * Checks the headers and the timestamp, without the key: a request that fails here costs no
 * Secret lookup. `nowSeconds` is our clock.
 */
export const parseSignatureHeaders = (
  h: SignatureHeaders,
  nowSeconds: number,
): SignedRequest | SignatureFailure => {
  if (!h.id || !h.timestamp || !h.signature)
    return fail(
      'MissingSignature',
      'webhook-id, webhook-timestamp and webhook-signature are required (Standard Webhooks)',
    );
  if (!ID.test(h.id))
    return fail('MalformedSignature', 'webhook-id must be 1-256 printable ASCII characters without "."');
  if (!TIMESTAMP.test(h.timestamp))
    return fail('MalformedSignature', 'webhook-timestamp must be Unix time in seconds');
  const timestamp = Number(h.timestamp);
  if (Math.abs(nowSeconds - timestamp) > TOLERANCE_SECONDS)
    return fail(
      'StaleTimestamp',
      `webhook-timestamp is ${timestamp < nowSeconds ? 'older' : 'newer'} than ${TOLERANCE_SECONDS} s from the server's clock; sign the request again`,
    );
  // Space-separated; a proxy may join repeated header lines with ", " (v1,A=, v1,B=).
  const candidates = h.signature
    .split(' ')
    .map((x) => x.replace(/,$/, ''))
    .filter(Boolean);
  if (candidates.length > MAX_SIGNATURES)
    return fail('MalformedSignature', `at most ${MAX_SIGNATURES} signatures in webhook-signature`);
  // Other versions (v1a: asymmetric) are skipped, as the spec asks; we only have a symmetric key.
  const signatures = candidates.flatMap((s) => {
    const m = V1.exec(s);
    return m?.[1] ? [Buffer.from(m[1], 'base64')] : [];
  });
  if (signatures.length === 0)
    return fail('MalformedSignature', 'webhook-signature has no "v1,<base64 HMAC-SHA256>" entry');
  return { ok: true, id: h.id, timestamp, timestampText: h.timestamp, signatures };
};

/** Whether one of the request's signatures is the key's HMAC of "<id>.<timestamp>.<body>". */
export const signedWith = (r: SignedRequest, body: Uint8Array, key: Buffer): boolean => {
  const expected = createHmac('sha256', key).update(`${r.id}.${r.timestampText}.`).update(body).digest();
  // Constant time per candidate, and every candidate is compared: time says nothing about which.
  let match = false;
  for (const s of r.signatures) match = timingSafeEqual(s, expected) || match;
  return match;
};

/** Checks headers, timestamp and signature, in that order. */
export const verifySignature = (
  h: SignatureHeaders,
  body: Uint8Array,
  key: Buffer,
  nowSeconds: number,
): Verification => {
  const r = parseSignatureHeaders(h, nowSeconds);
  if (!r.ok) return r;
  return signedWith(r, body, key)
    ? { ok: true, id: r.id, timestamp: r.timestamp }
    : fail('BadSignature', 'no signature matches');
};
