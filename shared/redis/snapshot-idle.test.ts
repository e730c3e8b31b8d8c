import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openSnapshot } from './snapshot.ts';

/**
 * A replication source on 127.0.0.1 that answers the handshake and, at SYNC, sends `payload` in
 * 64 KiB writes `gapMs` apart; with `stallAfter`, it stops after that many bytes and keeps the
 * connection open (a lost node: no FIN, no keepalive).
 */
const source = async (payload: Buffer, o: { stallAfter?: number; gapMs?: number } = {}) => {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => {
    sockets.push(s);
    let seen = '';
    s.on('data', async (d) => {
      seen += d.toString('latin1');
      // Each command is one RESP array; the handshake's are answered one at a time.
      while (/^\*\d+\r\n/.test(seen)) {
        const sync = seen.includes('SYNC');
        const end = seen.indexOf('*', 1);
        seen = end < 0 ? '' : seen.slice(end);
        if (!sync) {
          s.write('+OK\r\n');
          continue;
        }
        const wire = Buffer.concat([Buffer.from(`$${payload.length}\r\n`), payload]);
        const limit = o.stallAfter ?? wire.length;
        for (let at = 0; at < limit; at += 64 * 1024) {
          if (!s.write(wire.subarray(at, Math.min(at + 64 * 1024, limit)))) await once(s, 'drain');
          if (o.gapMs) await new Promise((r) => setTimeout(r, o.gapMs));
        }
      }
    });
    s.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
};

const rdbOf = (bytes: number) =>
  Buffer.concat([Buffer.from('REDIS0011'), randomBytes(bytes), Buffer.from([0xff]), Buffer.alloc(8)]);

describe('openSnapshot, when the source goes quiet', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  it('gives up on a source that stops sending without closing: SourceLost, "nothing received"', async () => {
    const rdb = rdbOf(512 * 1024);
    const s = await source(rdb, { stallAfter: 128 * 1024 });
    closers.push(s.close);
    const snap = await openSnapshot({ host: '127.0.0.1', port: s.port, idleTimeoutMs: 300 });
    let read = 0;
    const error = await (async () => {
      for await (const chunk of snap.rdb) read += (chunk as Buffer).length;
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ reason: 'SourceLost' });
    expect(String((error as Error).message)).toMatch(/nothing received for 0.3s/);
    expect(read).toBeLessThan(rdb.length);
  });

  it('never counts the time its consumer makes it wait: a pause three times the idle limit, then the whole RDB', async () => {
    const rdb = rdbOf(4 * 1024 * 1024);
    const s = await source(rdb);
    closers.push(s.close);
    const snap = await openSnapshot({
      host: '127.0.0.1',
      port: s.port,
      // Long enough that a busy test process never looks idle while it reads.
      idleTimeoutMs: 1000,
      highWaterMark: 64 * 1024,
    });
    const chunks: Buffer[] = [];
    let paused = false;
    for await (const chunk of snap.rdb) {
      chunks.push(Buffer.from(chunk as Buffer));
      if (!paused) {
        paused = true;
        // The stream's buffer fills, the socket is paused, the source waits: not idle.
        await new Promise((r) => setTimeout(r, 3000));
      }
    }
    expect(Buffer.concat(chunks).equals(rdb)).toBe(true);
  });
});
