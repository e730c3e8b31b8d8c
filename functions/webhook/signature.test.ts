import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSecret, TOLERANCE_SECONDS, verifySignature } from './signature.ts';

// Expected signatures are computed here with node:crypto directly, never with the code under test.
const hmac = (key: Buffer, content: string | Buffer) =>
  createHmac('sha256', key).update(content).digest('base64');
const sig = (key: Buffer, id: string, ts: number | string, body: string) =>
  `v1,${hmac(key, `${id}.${ts}.${body}`)}`;

const KEY = randomBytes(32);
const OTHER = randomBytes(32);
const NOW = 1_763_000_000;
const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const BODY = '{"latest":true}';
const bytes = (s: string) => new TextEncoder().encode(s);
const verify = (h: { id?: string; timestamp?: string; signature?: string }, body = BODY, key = KEY) =>
  verifySignature({ id: h.id, timestamp: h.timestamp, signature: h.signature }, bytes(body), key, NOW);
const codeOf = (v: ReturnType<typeof verify>) => (v.ok ? 'ok' : v.code);

describe('parseSecret', () => {
  it('takes the base64 key of whsec_… secrets of 24 to 64 bytes', () => {
    expect(parseSecret(`whsec_${KEY.toString('base64')}`)?.equals(KEY)).toBe(true);
    expect(parseSecret(`whsec_${randomBytes(24).toString('base64')}`)?.length).toBe(24);
    expect(parseSecret(`whsec_${randomBytes(64).toString('base64')}`)?.length).toBe(64);
    // A trailing newline from `echo … | kubectl create secret` is not part of the key.
    expect(parseSecret(`whsec_${KEY.toString('base64')}\n`)?.equals(KEY)).toBe(true);
  });

  it('refuses anything else', () => {
    for (const bad of [
      KEY.toString('base64'), // no prefix
      `whsec_${randomBytes(16).toString('base64')}`, // too short
      `whsec_${randomBytes(65).toString('base64')}`, // too long
      `whsec_${KEY.toString('base64url')}_-`, // not base64
      'whsec_',
      `whsec_${KEY.toString('base64').slice(1)}`, // not a multiple of 4
      '',
    ])
      expect(parseSecret(bad), bad).toBeUndefined();
  });
});

describe('verifySignature', () => {
  it('matches the Standard Webhooks reference vector', () => {
    const key = parseSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(key).toBeDefined();
    const v = verifySignature(
      {
        id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        timestamp: '1614265330',
        signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
      bytes('{"test": 2432232314}'),
      key!,
      1614265330,
    );
    expect(v).toEqual({ ok: true, id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330 });
  });

  it('accepts a correct signature, also among several (key rotation)', () => {
    const good = sig(KEY, ID, NOW, BODY);
    expect(verify({ id: ID, timestamp: String(NOW), signature: good })).toEqual({
      ok: true,
      id: ID,
      timestamp: NOW,
    });
    const several = [sig(OTHER, ID, NOW, BODY), 'v1a,c29tZXRoaW5nIGFzeW1tZXRyaWM=', good].join(' ');
    expect(codeOf(verify({ id: ID, timestamp: String(NOW), signature: several }))).toBe('ok');
    // Extra spaces between entries are tolerated.
    expect(codeOf(verify({ id: ID, timestamp: String(NOW), signature: `  ${good}   x  ` }))).toBe('ok');
    // Repeated header lines, joined by a proxy or a client library with ", ".
    for (const joined of [`${good}, ${sig(OTHER, ID, NOW, BODY)}`, `${sig(OTHER, ID, NOW, BODY)}, ${good}`])
      expect(codeOf(verify({ id: ID, timestamp: String(NOW), signature: joined })), joined).toBe('ok');
    expect(
      codeOf(
        verify({
          id: ID,
          timestamp: String(NOW),
          signature: `${sig(OTHER, ID, NOW, BODY)}, ${sig(OTHER, ID, NOW, BODY)}`,
        }),
      ),
    ).toBe('BadSignature');
  });

  it('signs the raw bytes: a body with multi-byte characters verifies byte for byte', () => {
    const body = '{"backup":"nächtlich ☃"}';
    const signature = `v1,${hmac(KEY, Buffer.concat([Buffer.from(`${ID}.${NOW}.`), Buffer.from(body)]))}`;
    expect(codeOf(verify({ id: ID, timestamp: String(NOW), signature }, body))).toBe('ok');
  });

  it('signs the timestamp as sent, leading zeros included', () => {
    const ts = `00${NOW}`;
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: sig(KEY, ID, ts, BODY) }))).toBe('ok');
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: sig(KEY, ID, NOW, BODY) }))).toBe(
      'BadSignature',
    );
  });

  it('refuses the wrong secret, id, timestamp or body', () => {
    const ts = String(NOW);
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: sig(OTHER, ID, NOW, BODY) }))).toBe(
      'BadSignature',
    );
    expect(codeOf(verify({ id: 'msg_other', timestamp: ts, signature: sig(KEY, ID, NOW, BODY) }))).toBe(
      'BadSignature',
    );
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: sig(KEY, ID, NOW - 1, BODY) }))).toBe(
      'BadSignature',
    );
    expect(
      codeOf(verify({ id: ID, timestamp: ts, signature: sig(KEY, ID, NOW, BODY) }, '{"latest":true} ')),
    ).toBe('BadSignature');
    expect(
      codeOf(verify({ id: ID, timestamp: ts, signature: sig(KEY, ID, NOW, BODY) }, '{"latest":false}')),
    ).toBe('BadSignature');
    // Several signatures, none right.
    const none = [sig(OTHER, ID, NOW, BODY), sig(KEY, ID, NOW, '{}')].join(' ');
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: none }))).toBe('BadSignature');
  });

  it('takes only the canonical base64 of the right HMAC, as the spec compares text (seed 409827454 of the fuzz test)', () => {
    const ts = String(NOW);
    const right = sig(KEY, ID, NOW, BODY);
    expect(codeOf(verify({ id: ID, timestamp: ts, signature: right }))).toBe('ok');
    // The same 32 bytes, spelled with the last character's two unused bits set.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = right.length - 2;
    for (const low of [1, 2, 3]) {
      const other = `${right.slice(0, last)}${alphabet[alphabet.indexOf(right[last] ?? '') + low]}=`;
      expect(Buffer.from(other.slice(3), 'base64').equals(Buffer.from(right.slice(3), 'base64'))).toBe(true);
      expect(codeOf(verify({ id: ID, timestamp: ts, signature: other })), other).not.toBe('ok');
    }
  });

  it('refuses timestamps more than five minutes off, either way', () => {
    const at = (ts: number) => verify({ id: ID, timestamp: String(ts), signature: sig(KEY, ID, ts, BODY) });
    expect(codeOf(at(NOW - TOLERANCE_SECONDS))).toBe('ok');
    expect(codeOf(at(NOW + TOLERANCE_SECONDS))).toBe('ok');
    const old = at(NOW - TOLERANCE_SECONDS - 1);
    expect(old).toMatchObject({ ok: false, code: 'StaleTimestamp', message: expect.stringMatching(/older/) });
    const future = at(NOW + TOLERANCE_SECONDS + 1);
    expect(future).toMatchObject({
      ok: false,
      code: 'StaleTimestamp',
      message: expect.stringMatching(/newer/),
    });
    expect(codeOf(at(0))).toBe('StaleTimestamp');
  });

  it('refuses missing headers', () => {
    const full = { id: ID, timestamp: String(NOW), signature: sig(KEY, ID, NOW, BODY) };
    for (const k of ['id', 'timestamp', 'signature'] as const)
      expect(codeOf(verify({ ...full, [k]: undefined })), k).toBe('MissingSignature');
    expect(codeOf(verify({ ...full, signature: '' }))).toBe('MissingSignature');
  });

  it('refuses malformed headers', () => {
    const ts = String(NOW);
    const good = sig(KEY, ID, NOW, BODY);
    const malformed: [string, { id: string; timestamp: string; signature: string }][] = [
      ['timestamp not a number', { id: ID, timestamp: 'yesterday', signature: good }],
      ['timestamp in milliseconds', { id: ID, timestamp: `${NOW}000`, signature: good }],
      ['negative timestamp', { id: ID, timestamp: `-${NOW}`, signature: good }],
      ['fractional timestamp', { id: ID, timestamp: `${NOW}.5`, signature: good }],
      ['id with a dot', { id: 'a.b', timestamp: ts, signature: sig(KEY, 'a.b', NOW, BODY) }],
      ['id with a space', { id: 'a b', timestamp: ts, signature: sig(KEY, 'a b', NOW, BODY) }],
      [
        'id too long',
        { id: 'x'.repeat(257), timestamp: ts, signature: sig(KEY, 'x'.repeat(257), NOW, BODY) },
      ],
      ['no version', { id: ID, timestamp: ts, signature: good.slice(3) }],
      ['unknown version only', { id: ID, timestamp: ts, signature: good.replace('v1,', 'v2,') }],
      ['not base64', { id: ID, timestamp: ts, signature: 'v1,!!!!' }],
      ['hex instead of base64', { id: ID, timestamp: ts, signature: `v1,${'ab'.repeat(32)}` }],
      ['truncated', { id: ID, timestamp: ts, signature: good.slice(0, -4) }],
      ['too many entries', { id: ID, timestamp: ts, signature: Array(17).fill(good).join(' ') }],
    ];
    for (const [what, h] of malformed) expect(codeOf(verify(h)), what).toBe('MalformedSignature');
  });

  it('never accepts a signature of another key for the same content, however many are sent', () => {
    for (let i = 0; i < 200; i++) {
      const forged = Array.from({ length: 4 }, () => sig(randomBytes(32), ID, NOW, BODY)).join(' ');
      expect(codeOf(verify({ id: ID, timestamp: String(NOW), signature: forged }))).toBe('BadSignature');
    }
  });
});
