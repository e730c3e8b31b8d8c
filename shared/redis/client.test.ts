import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRedis, RedisConnectionError } from './client.ts';

// A server that accepts and never answers: what a hung or stopped (SIGSTOP) redis-server looks
// like from the client. No handler may wait on it longer than its timeout.
describe('the Redis control client on a server that never answers', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  const silent = async () => {
    server = createServer((s) => {
      sockets.push(s);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    return typeof address === 'object' && address ? address.port : 0;
  };
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((r) => server?.close(r));
  });

  it('fails a command after its timeout, retryable, and every command queued behind it', async () => {
    const port = await silent();
    const c = await connectRedis({ host: '127.0.0.1', port, commandTimeoutMs: 300 });
    const first = c.command('INFO', 'replication');
    const second = c.command('REPLICAOF', 'NO', 'ONE');
    await expect(first).rejects.toThrow(/INFO timed out/);
    await expect(second).rejects.toBeInstanceOf(RedisConnectionError);
    await expect(first).rejects.toMatchObject({ retry: true });
    c.close();
  });

  it('fails AUTH at connect after the timeout, so a connect never hangs either', async () => {
    const port = await silent();
    await expect(
      connectRedis({ host: '127.0.0.1', port, password: 'pw', commandTimeoutMs: 300 }),
    ).rejects.toThrow(/AUTH timed out/);
  });
});
