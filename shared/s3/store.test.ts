import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Store } from './store.ts';

// A store that takes a request and never answers (a wedged server, a connection dropped on the
// way): every call fails after the silence, as an error to retry, never hanging the run (or a
// lock it holds). A TCP server on 127.0.0.1 that reads and says nothing.
describe('s3Store against a server that never answers', () => {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('data', () => {});
  });
  let endpoint = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const store = () =>
    s3Store({
      bucket: 'b',
      region: 'us-east-1',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      credentialsName: 's3',
      maxAttempts: 1,
      silenceMs: 300,
    });

  it.each([
    ['listing and aborting unfinished uploads', (s: ReturnType<typeof store>) => s.abortUnfinished('k')],
    ['a HEAD', (s: ReturnType<typeof store>) => s.head('k')],
    ['a PUT', (s: ReturnType<typeof store>) => s.put('k', Buffer.from('x'), 'text/plain')],
  ])(
    '%s fails after the silence, to be retried (without it, it would hang past the test timeout)',
    async (_, call) => {
      const error = await call(store()).then(
        () => undefined,
        (e: unknown) => e as { retry?: unknown; message?: string },
      );
      expect(error, 'it must fail, not succeed').toBeDefined();
      expect(error?.retry).not.toBe(false);
    },
  );
});

// A completion the server no longer knows (NoSuchUpload): an earlier try of it may have completed
// the upload and lost its answer. Retried, never final. An HTTP server that takes the upload and
// its part, then answers the completion with S3's error.
describe('s3Store completing an upload the server no longer knows', () => {
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'POST' && url.searchParams.has('uploads')) {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>',
        );
      } else if (req.method === 'PUT') {
        res.writeHead(200, { etag: '"e1"' });
        res.end();
      } else if (req.method === 'DELETE') {
        res.writeHead(204);
        res.end();
      } else {
        res.writeHead(404, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>',
        );
      }
    });
  });
  let endpoint = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('is an error to retry, saying the completion was not confirmed', async () => {
    const store = s3Store({
      bucket: 'b',
      region: 'us-east-1',
      endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
      credentialsName: 's3',
      maxAttempts: 1,
      concurrency: 1,
    });
    const body = (async function* () {
      yield Buffer.alloc(10);
    })();
    const error = await store
      .upload('k', body, { partSize: () => 5 * 1024 * 1024, contentType: 'application/octet-stream' })
      .then(
        () => undefined,
        (e: unknown) => e as { reason?: string; retry?: boolean; message?: string },
      );
    expect(error).toMatchObject({ reason: 'UploadGone', retry: true });
    expect(error?.message).toMatch(/was not confirmed/);
  });
});
