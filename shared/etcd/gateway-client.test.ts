// The client's HTTP and streaming mechanics against a scripted local HTTP server that frames its
// answers as etcd's gateway does (backpressure, cut connections, stalls and aborts are hard to
// make a real etcd do on cue). The client against real etcd: test/etcd/client.test.ts.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createEtcdClient } from './client.ts';
import { EtcdAbortedError, EtcdConnectionError, EtcdServerError } from './errors.ts';
import { gatewaySnapshot } from './fixture.ts';

type Script = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const serve = async (script: Script): Promise<{ url: string; server: Server }> => {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    await script(req, res, Buffer.concat(chunks).toString());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
};

/** A port nothing listens on. */
const refusedUrl = async () => {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
};

const client = (endpoints: string[], timeoutMs = 2000) => {
  const c = createEtcdClient({ endpoints, timeoutMs });
  cleanups.push(() => c.close());
  return c;
};

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Deterministic database bytes of `size`, made a blob at a time. */
const dbBlob = (offset: number, n: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i += 4) b.writeUInt32LE((offset + i) >>> 0, i);
  return b;
};

describe('unary calls', () => {
  it('sends the gateway’s JSON and parses the answer', async () => {
    let seen: unknown;
    const { url } = await serve((req, res, body) => {
      seen = { path: req.url, method: req.method, type: req.headers['content-type'], body: JSON.parse(body) };
      json(res, 200, { header: { revision: '7' } });
    });
    await expect(client([url]).put('k', 'v')).resolves.toEqual({ revision: 7 });
    expect(seen).toEqual({
      path: '/v3/kv/put',
      method: 'POST',
      type: 'application/json',
      body: { key: 'aw==', value: 'dg==' },
    });
  });

  it('reads fail over to the next endpoint; the one that answered is tried first next time', async () => {
    const dead = await refusedUrl();
    let calls = 0;
    const { url } = await serve((_req, res) => {
      calls++;
      json(res, 200, { members: [{ ID: '1', name: 'a' }] });
    });
    const c = client([dead, url]);
    expect((await c.memberList()).members[0]?.id).toBe('1');
    expect((await c.memberList()).members[0]?.id).toBe('1');
    expect(calls).toBe(2);
  });

  it('a read moves on after a retryable etcd error; a final one stops it', async () => {
    const noLeader = await serve((_q, res) => json(res, 503, { code: 14, message: 'etcdserver: no leader' }));
    const ok = await serve((_q, res) => json(res, 200, { header: {}, kvs: [], count: '0' }));
    await expect(client([noLeader.url, ok.url]).get('x')).resolves.toBeUndefined();
    const notFound = await serve((_q, res) =>
      json(res, 404, { code: 5, message: 'etcdserver: member not found' }),
    );
    await expect(client([notFound.url, ok.url]).get('x')).rejects.toMatchObject({ reason: 'MemberNotFound' });
  });

  it('a write does not move on once it may have been applied', async () => {
    let second = 0;
    const stuck = await serve((_q, res) =>
      json(res, 503, { code: 14, message: 'etcdserver: request timed out' }),
    );
    const ok = await serve((_q, res) => {
      second++;
      json(res, 200, {});
    });
    const e = await client([stuck.url, ok.url])
      .memberAdd(['http://n:2380'], { isLearner: true })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EtcdServerError);
    expect(e).toMatchObject({ reason: 'Timeout', retry: true, endpoint: stuck.url });
    expect(second).toBe(0);
    // Refused: it surely never arrived, so it goes to the next endpoint.
    await expect(client([await refusedUrl(), ok.url]).put('a', 'b')).resolves.toEqual({ revision: 0 });
  });

  it('times out and aborts with typed errors, and closes the request', async () => {
    const closed: string[] = [];
    const { url } = await serve((req) => {
      req.socket.on('close', () => closed.push(req.url ?? ''));
    });
    const t0 = Date.now();
    const e = await client([url])
      .status(url, { timeoutMs: 200 })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EtcdConnectionError);
    expect(e).toMatchObject({ reason: 'Timeout', retry: true });
    expect(Date.now() - t0).toBeLessThan(1500);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('shutdown')), 100);
    const a = await client([url])
      .defragment(url, { signal: ac.signal })
      .catch((x: unknown) => x);
    expect(a).toBeInstanceOf(EtcdAbortedError);
    expect(a).toMatchObject({ retry: false });
    await expect(client([url]).put('a', 'b', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      EtcdAbortedError,
    );
    await sleep(100);
    expect(closed).toEqual(['/v3/maintenance/status', '/v3/maintenance/defragment']);
  });

  it('findLeader: of two members that both think they lead, the newer term wins', async () => {
    const claims = (me: string, term: string) => ({ header: { member_id: me }, leader: me, raftTerm: term });
    const stale = await serve((_q, res) => json(res, 200, claims('1', '4')));
    const fresh = await serve((_q, res) => json(res, 200, claims('2', '5')));
    expect((await client([stale.url, fresh.url]).findLeader())?.memberId).toBe('2');
    expect((await client([fresh.url, stale.url]).findLeader())?.memberId).toBe('2');
  });

  it('refuses ids that are not uint64 strings before sending anything', async () => {
    const c = client(['http://127.0.0.1:1']);
    await expect(c.memberRemove('0x12')).rejects.toThrow(/not an etcd member id/);
  });

  it('finds the leader among the endpoints for moveLeader', async () => {
    const statusOf = (me: string) => ({ header: { member_id: me }, leader: '2', version: '3.6.16' });
    const moved: string[] = [];
    const follower = await serve((_req, res) => json(res, 200, statusOf('1')));
    const leader = await serve((req, res, body) => {
      if (req.url === '/v3/maintenance/transfer-leadership') moved.push(JSON.parse(body).targetID);
      json(res, 200, req.url === '/v3/maintenance/status' ? statusOf('2') : { header: {} });
    });
    const c = client([follower.url, leader.url]);
    await expect(c.moveLeader('1')).resolves.toEqual({ endpoint: leader.url });
    expect(moved).toEqual(['1']);
  });
});

describe('snapshot stream', () => {
  /** A gateway snapshot of `size` bytes, written as fast as the client takes it. */
  const snapshotServer = async (size: number, o: { onWritten?: (db: number) => void } = {}) => {
    const hash = createHash('sha256');
    let reqClosed = false;
    const s = await serve(async (req, res) => {
      res.on('close', () => {
        reqClosed = true;
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      const blob = 32 * 1024;
      for (let sent = 0; sent < size && !res.destroyed; ) {
        const part = dbBlob(sent, Math.min(blob, size - sent));
        hash.update(part);
        sent += part.length;
        const remaining = size - sent;
        const line = JSON.stringify({
          result: {
            ...(remaining ? { remaining_bytes: String(remaining) } : {}),
            blob: part.toString('base64'),
          },
        });
        o.onWritten?.(sent);
        if (!res.write(`${line}\n`)) {
          const done = new AbortController();
          await Promise.race([once(res, 'drain', done), once(res, 'close', done)]).catch(() => {});
          done.abort();
        }
      }
      if (!res.destroyed)
        res.end(`${JSON.stringify({ result: { blob: hash.digest().toString('base64') } })}\n`);
      void req;
    });
    return { ...s, closed: () => reqClosed };
  };

  it('streams 96 MiB with bounded buffering: the server waits while the consumer does', async () => {
    const size = 96 * 1024 * 1024;
    let written = 0;
    const { url } = await snapshotServer(size, { onWritten: (n) => (written = n) });
    const snap = await client([url]).snapshot({ highWaterMark: 256 * 1024 });
    expect([snap.dbSize, snap.size]).toEqual([size, size + 32]);
    await sleep(500);
    // Not read yet: what was sent is at most this stream's buffer plus the kernel's socket buffers.
    const aheadWhilePaused = written;
    expect(snap.stream.readableLength).toBeLessThanOrEqual(256 * 1024 + 128 * 1024);
    expect(aheadWhilePaused).toBeLessThan(24 * 1024 * 1024);
    let total = 0;
    let maxBuffered = 0;
    const hash = createHash('sha256');
    let tail = Buffer.alloc(0);
    for await (const chunk of snap.stream) {
      const c = chunk as Buffer;
      maxBuffered = Math.max(maxBuffered, snap.stream.readableLength);
      total += c.length;
      const joined = Buffer.concat([tail, c]);
      hash.update(joined.subarray(0, Math.max(0, joined.length - 32)));
      tail = joined.subarray(Math.max(0, joined.length - 32));
    }
    expect(total).toBe(size + 32);
    expect(hash.digest().equals(tail)).toBe(true);
    expect(maxBuffered).toBeLessThanOrEqual(256 * 1024 + 128 * 1024);
  });

  it('destroying the stream closes the connection', async () => {
    const s = await snapshotServer(64 * 1024 * 1024);
    const snap = await client([s.url]).snapshot();
    for await (const _ of snap.stream) break; // for-await's break destroys the stream
    await sleep(200);
    expect(s.closed()).toBe(true);
  });

  it('an error message mid-stream fails the stream with etcd’s error', async () => {
    const db = dbBlob(0, 100_000);
    const lines = gatewaySnapshot(db);
    const { url } = await serve((_q, res) => {
      res.writeHead(200);
      res.end(`${lines[0]}${lines[1]}{"error":{"code":14,"message":"etcdserver: server stopped"}}\n`);
    });
    const snap = await client([url]).snapshot();
    const e = await (async () => {
      for await (const _ of snap.stream);
    })().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EtcdServerError);
    expect(e).toMatchObject({ reason: 'ServerStopped', retry: true });
  });

  it('a cut connection fails the stream (never a short success)', async () => {
    const lines = gatewaySnapshot(dbBlob(0, 200_000));
    const { url } = await serve((_q, res) => {
      res.writeHead(200);
      res.write(lines.slice(0, 3).join(''));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const snap = await client([url]).snapshot();
    const e = await (async () => {
      for await (const _ of snap.stream);
    })().catch((x: unknown) => x);
    expect(e).toMatchObject({ retry: true });
    expect(['Connection', 'SnapshotTruncated']).toContain((e as { reason: string }).reason);
  });

  it('a stall past the idle timeout fails it; so does the signal', async () => {
    const lines = gatewaySnapshot(dbBlob(0, 100_000));
    const { url } = await serve((_q, res) => {
      res.writeHead(200);
      res.write(lines[0]);
    });
    const stalled = await client([url]).snapshot({ idleTimeoutMs: 200 });
    const e = await (async () => {
      for await (const _ of stalled.stream);
    })().catch((x: unknown) => x);
    expect(e).toMatchObject({ reason: 'Timeout', retry: true });

    const ac = new AbortController();
    const aborted = await client([url]).snapshot({ signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const a = await (async () => {
      for await (const _ of aborted.stream);
    })().catch((x: unknown) => x);
    expect(a).toBeInstanceOf(EtcdAbortedError);
  });

  it('no first message in time, or an error answer, rejects snapshot() itself; reads fail over', async () => {
    const silent = await serve((_q, res) => {
      res.writeHead(200);
      res.flushHeaders();
    });
    await expect(client([silent.url]).snapshot({ timeoutMs: 200 })).rejects.toMatchObject({
      reason: 'Timeout',
    });
    const down = await serve((_q, res) => json(res, 503, { code: 14, message: 'etcdserver: no leader' }));
    await expect(client([down.url]).snapshot()).rejects.toMatchObject({ reason: 'NoLeader' });
    const good = await snapshotServer(50_000);
    const snap = await client([await refusedUrl(), down.url, good.url]).snapshot();
    expect(snap.endpoint).toBe(good.url);
    let n = 0;
    for await (const c of snap.stream) n += (c as Buffer).length;
    expect(n).toBe(50_032);
  });
});
