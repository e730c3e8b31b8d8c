import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { S3ServiceError, S3TimeoutError, s3Http } from './http.ts';
import { UNSIGNED_PAYLOAD } from './sigv4.ts';

/** A local HTTP server that answers each request with the next of `answers` and records them. */
const server = async (answers: ((req: IncomingMessage, res: ServerResponse) => void)[]) => {
  const seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: Buffer }[] = [];
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      (answers.shift() ?? ((_q, r) => r.writeHead(500).end()))(req, res);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  const client = (o: { maxAttempts?: number; requestTimeoutMs?: number } = {}) =>
    s3Http({
      bucket: 'bkt',
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
      forcePathStyle: true,
      credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
      maxAttempts: o.maxAttempts ?? 3,
      ...(o.requestTimeoutMs ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
    });
  return { seen, client };
};
const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});
const xmlError = (status: number, code: string) => (_q: IncomingMessage, r: ServerResponse) =>
  r.writeHead(status).end(`<?xml version="1.0"?><Error><Code>${code}</Code><Message>m</Message></Error>`);

describe('s3Http', () => {
  it('signs the path-style request it sends; an unsigned payload says so, and the body goes as given', async () => {
    const s = await server([(_q, r) => r.writeHead(200, { etag: '"e"' }).end()]);
    const body = Buffer.from('part bytes');
    const r = await s.client().send({
      method: 'PUT',
      key: 'a b/c.rdb',
      query: { partNumber: '1', uploadId: 'u' },
      headers: { 'x-amz-checksum-crc32': 'AAAAAA==' },
      body,
      unsignedPayload: true,
    });
    expect(r.headers.etag).toBe('"e"');
    const [req] = s.seen;
    expect(req?.url).toBe('/bkt/a%20b/c.rdb?partNumber=1&uploadId=u');
    expect(req?.headers['x-amz-content-sha256']).toBe(UNSIGNED_PAYLOAD);
    expect(req?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AK\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=content-length;host;x-amz-checksum-crc32;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    expect(req?.body.equals(body)).toBe(true);
  });

  it('tries again what may pass (5xx, throttling), and gives up after maxAttempts', async () => {
    const s = await server([
      xmlError(503, 'SlowDown'),
      xmlError(500, 'InternalError'),
      (_q, r) => r.end('ok'),
    ]);
    expect((await s.client().send({ method: 'GET', key: 'k' })).body.toString()).toBe('ok');
    expect(s.seen).toHaveLength(3);
    const t = await server([xmlError(503, 'SlowDown'), xmlError(503, 'SlowDown'), xmlError(503, 'SlowDown')]);
    await expect(t.client({ maxAttempts: 2 }).send({ method: 'GET', key: 'k' })).rejects.toMatchObject({
      code: 'SlowDown',
      status: 503,
    });
    expect(t.seen).toHaveLength(2);
  });

  it('does not try again what only a change can fix; a bodiless 404 is NotFound', async () => {
    const s = await server([xmlError(403, 'SignatureDoesNotMatch'), (_q, r) => r.writeHead(404).end()]);
    const e = await s
      .client()
      .send({ method: 'GET', key: 'k' })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(S3ServiceError);
    expect(e).toMatchObject({ code: 'SignatureDoesNotMatch', status: 403 });
    expect(s.seen).toHaveLength(1);
    await expect(s.client().send({ method: 'HEAD', key: 'k' })).rejects.toMatchObject({
      code: 'NotFound',
      status: 404,
    });
  });

  it('gives up on a server that stays silent, and on one that is not there', async () => {
    const s = await server([() => {}, () => {}]);
    await expect(
      s.client({ maxAttempts: 2, requestTimeoutMs: 200 }).send({ method: 'GET', key: 'k' }),
    ).rejects.toBeInstanceOf(S3TimeoutError);
    expect(s.seen).toHaveLength(2);
    const gone = s3Http({
      bucket: 'b',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 2,
    });
    await expect(gone.send({ method: 'GET', key: 'k' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('streams the body of an answer, and stops at once when aborted', async () => {
    const s = await server([(_q, r) => r.end('0123456789'), () => {}]);
    const res = await s.client().stream({ method: 'GET', key: 'k' });
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('0123456789');
    const ac = new AbortController();
    const p = s.client().send({ method: 'GET', key: 'k', signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 50);
    await expect(p).rejects.toThrow('stop');
  });
});
