import { createSocket } from 'node:dgram';
import { isIPv4, isIPv6, connect as tcpConnect } from 'node:net';
import { decodeHeader } from './message.ts';
import { canonical, readName } from './name.ts';

export type Transport = 'udp' | 'tcp';

/** Where names outside the cluster go: the node's own resolvers. */
export type Forwarder = {
  /** Sends the query as it came; the first matching reply, or undefined when none came in time. */
  forward(query: Buffer, transport: Transport): Promise<Buffer | undefined>;
};

export type Upstream = { readonly host: string; readonly port: number };

/**
 * The resolvers names outside the cluster may go to: the node's nameservers on loopback only
 * (127.0.0.0/8, ::1), at most three as glibc reads them, never `self`. Test-bed traffic stays on
 * this machine, so a resolver elsewhere (a cloud's 10.x or 169.254.x) is left out and such names
 * get SERVFAIL, as they would in a cluster without egress.
 */
export const localUpstreams = (nameservers: readonly string[], self: string): Upstream[] =>
  nameservers
    .filter((ip) => isLoopback(ip) && ip !== self)
    .slice(0, 3)
    .map((ip) => ({ host: ip, port: 53 }));

const isLoopback = (ip: string): boolean =>
  (isIPv4(ip) && ip.startsWith('127.')) || (isIPv6(ip) && (ip === '::1' || ip === '0:0:0:0:0:0:0:1'));

/**
 * Forwards to `upstreams` in order, each bounded by `timeoutMs`, over the transport the client
 * used (a truncated UDP reply goes back truncated, and the client asks again over TCP). A reply
 * counts only if it comes from the upstream asked (a connected socket) and answers the same ID
 * and question. Nothing is sent anywhere but to `upstreams`.
 */
export const upstreamForwarder = (o: { upstreams: readonly Upstream[]; timeoutMs: number }): Forwarder => ({
  forward: async (query, transport) => {
    for (const u of o.upstreams) {
      const reply = await (transport === 'udp' ? viaUdp : viaTcp)(u, query, o.timeoutMs).catch(
        () => undefined,
      );
      if (reply) return reply;
    }
    return undefined;
  },
});

/** Same ID, a response, and the same question (names compared case-insensitively). */
export const answersQuery = (query: Buffer, reply: Buffer): boolean => {
  try {
    const q = decodeHeader(query);
    const r = decodeHeader(reply);
    if (!r.qr || r.id !== q.id || r.qdcount !== q.qdcount) return false;
    if (q.qdcount === 0) return true;
    const qn = readName(query, 12);
    const rn = readName(reply, 12);
    return (
      canonical(qn.name) === canonical(rn.name) &&
      query.subarray(qn.next, qn.next + 4).equals(reply.subarray(rn.next, rn.next + 4))
    );
  } catch {
    return false;
  }
};

const viaUdp = (u: Upstream, query: Buffer, timeoutMs: number) =>
  new Promise<Buffer | undefined>((resolve) => {
    const socket = createSocket(isIPv6(u.host) ? 'udp6' : 'udp4');
    let settled = false;
    const done = (reply?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      resolve(reply);
    };
    const timer = setTimeout(() => done(), timeoutMs);
    socket.on('error', () => done());
    socket.on('message', (msg) => {
      if (answersQuery(query, msg)) done(msg);
    });
    socket.connect(u.port, u.host, () => socket.send(query, (error) => error && done()));
  });

const viaTcp = (u: Upstream, query: Buffer, timeoutMs: number) =>
  new Promise<Buffer | undefined>((resolve) => {
    const socket = tcpConnect({ host: u.host, port: u.port });
    let received = Buffer.alloc(0);
    let settled = false;
    const done = (reply?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(reply);
    };
    const timer = setTimeout(() => done(), timeoutMs);
    socket.on('error', () => done());
    socket.on('close', () => done());
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(query.length);
      socket.write(Buffer.concat([length, query]));
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2) return;
      const size = received.readUInt16BE(0);
      if (received.length < 2 + size) return;
      const reply = received.subarray(2, 2 + size);
      done(answersQuery(query, reply) ? reply : undefined);
    });
  });
