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
