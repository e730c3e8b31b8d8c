import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { queryBytes } from './fixtures.ts';
import { answersQuery, localUpstreams, upstreamForwarder } from './forward.ts';
import { TYPE } from './message.ts';

/** Turns a query into a reply: QR set, the rest as it came (enough to be recognised). */
const asReply = (q: Buffer) => {
  const r = Buffer.from(q);
  r[2] = (r[2] ?? 0) | 0x80;
  return r;
};

const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

/** A stand-in upstream resolver on 127.0.0.1: `reply` decides what (if anything) it sends back. */
const udpUpstream = async (reply: (q: Buffer) => Buffer | undefined) => {
  const s = createSocket('udp4');
  const seen: Buffer[] = [];
  s.on('message', (msg, from) => {
    seen.push(msg);
    const r = reply(msg);
    if (r) s.send(r, from.port, from.address);
  });
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  closers.push(() => s.close());
  return { host: '127.0.0.1', port: s.address().port, seen };
};

describe('forwarding to the upstream resolvers', () => {
  const q = queryBytes({ name: 'example.com', type: TYPE.A }, { id: 77 });

  it('recognises a reply by ID, QR and question (case-insensitive)', () => {
    expect(answersQuery(q, asReply(q))).toBe(true);
    expect(answersQuery(q, q)).toBe(false);
    const otherId = asReply(q);
    otherId.writeUInt16BE(78, 0);
    expect(answersQuery(q, otherId)).toBe(false);
    const upper = asReply(queryBytes({ name: 'EXAMPLE.com', type: TYPE.A }, { id: 77 }));
    expect(answersQuery(q, upper)).toBe(true);
    expect(answersQuery(q, asReply(queryBytes({ name: 'example.com', type: TYPE.AAAA }, { id: 77 })))).toBe(
      false,
    );
    expect(answersQuery(q, Buffer.from('junk'))).toBe(false);
  });

  it('relays the first upstream reply over UDP, as it came', async () => {
    const up = await udpUpstream(asReply);
    const reply = await upstreamForwarder({ upstreams: [up], timeoutMs: 1000 }).forward(q, 'udp');
    expect(reply).toEqual(asReply(q));
    expect(up.seen).toEqual([q]);
  });

  it('ignores a reply to another query, moves on after the timeout, and gives up after the last', async () => {
    const wrong = await udpUpstream((m) => {
      const r = asReply(m);
      r.writeUInt16BE(1, 0);
      return r;
    });
    const silent = await udpUpstream(() => undefined);
    const good = await udpUpstream(asReply);
    const started = Date.now();
    const reply = await upstreamForwarder({ upstreams: [wrong, silent, good], timeoutMs: 200 }).forward(
      q,
      'udp',
    );
    expect(reply).toEqual(asReply(q));
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect([wrong.seen.length, silent.seen.length, good.seen.length]).toEqual([1, 1, 1]);
    expect(
      await upstreamForwarder({ upstreams: [silent], timeoutMs: 100 }).forward(q, 'udp'),
    ).toBeUndefined();
    expect(await upstreamForwarder({ upstreams: [], timeoutMs: 100 }).forward(q, 'udp')).toBeUndefined();
  });

  it('forwards over TCP with the two-byte length prefix', async () => {
    const server = createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        const query = chunk.subarray(2, 2 + chunk.readUInt16BE(0));
        const r = asReply(query);
        const len = Buffer.alloc(2);
        len.writeUInt16BE(r.length);
        // Written in two pieces: the reader must wait for the whole message.
        socket.write(Buffer.concat([len, r.subarray(0, 5)]));
        setTimeout(() => socket.end(r.subarray(5)), 20);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    const reply = await upstreamForwarder({
      upstreams: [{ host: '127.0.0.1', port }],
      timeoutMs: 1000,
    }).forward(q, 'tcp');
    expect(reply).toEqual(asReply(q));
  });

  it('forwards only to loopback resolvers: traffic never leaves the machine', () => {
    const servers = [
      '10.255.255.53',
      '127.0.0.53',
      '169.254.169.253',
      '::1',
      '10.244.0.1',
      '127.0.0.1',
      '127.0.0.2',
    ];
    expect(localUpstreams(servers, '10.244.0.1')).toEqual([
      { host: '127.0.0.53', port: 53 },
      { host: '::1', port: 53 },
      { host: '127.0.0.1', port: 53 },
    ]);
    // Never ourselves: a loop would keep every unknown name busy until the timeout.
    expect(localUpstreams(['127.0.0.1'], '127.0.0.1')).toEqual([]);
    expect(localUpstreams(['10.255.255.53', 'not-an-ip'], '10.244.0.1')).toEqual([]);
  });
});
