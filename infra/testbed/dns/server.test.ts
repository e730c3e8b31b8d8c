import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureView, NS, queryBytes } from './fixtures.ts';
import { clusterDnsHandler } from './handler.ts';
import { decodeMessage, TYPE } from './message.ts';
import { type DnsServer, serveDns } from './server.ts';

const big = fixtureView({
  services: [{ metadata: { name: 'big', namespace: NS }, spec: { clusterIP: 'None', clusterIPs: ['None'] } }],
  slices: [
    {
      addressType: 'IPv4',
      metadata: { name: 'big-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'big' } },
      endpoints: Array.from({ length: 120 }, (_, i) => ({ addresses: [`10.244.1.${i + 1}`] })),
    },
  ],
});

/**
 * The server on real sockets, asked by another DNS implementation (Node's c-ares resolver): the
 * codec, UDP, the fallback to TCP on a truncated answer, NXDOMAIN and NODATA as a client sees them.
 */
describe('cluster DNS server on UDP and TCP', () => {
  let server: DnsServer;
  let resolver: Resolver;
  const transports: string[] = [];

  beforeAll(async () => {
    const handler = clusterDnsHandler({
      view: () => big,
      forwarder: { forward: async () => undefined },
      lookup: { zone: 'cluster.local', ttl: 5, serial: 1 },
    });
    server = await serveDns({
      host: '127.0.0.1',
      port: 0,
      handler: (query, transport) => {
        transports.push(transport);
        return handler(query, transport);
      },
    });
    resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([`127.0.0.1:${server.port}`]);
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers A, SRV and PTR to a stock resolver', async () => {
    expect(await resolver.resolve4('front.db.svc.cluster.local', { ttl: true })).toEqual([
      { address: '10.96.0.20', ttl: 5 },
    ]);
    expect((await resolver.resolve4('peers.db.svc.cluster.local')).sort()).toEqual([
      '10.244.0.5',
      '10.244.0.6',
    ]);
    const srv = await resolver.resolveSrv('_peer._tcp.peers.db.svc.cluster.local');
    expect(
      srv
        .map(({ name, port, priority, weight }) => ({ name, port, priority, weight }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    ).toEqual([
      { name: 'member-0.peers.db.svc.cluster.local', port: 2380, priority: 0, weight: 50 },
      { name: 'member-1.peers.db.svc.cluster.local', port: 2380, priority: 0, weight: 50 },
    ]);
    expect(await resolver.reverse('10.96.0.20')).toEqual(['front.db.svc.cluster.local']);
  });

  it('tells NXDOMAIN from NODATA, and SERVFAIL when no upstream answers', async () => {
    await expect(resolver.resolve4('nope.db.svc.cluster.local')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolver.resolve6('front.db.svc.cluster.local')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolve4('example.com')).rejects.toMatchObject({ code: 'ESERVFAIL' });
  });

  it('sends a big answer truncated over UDP, whole over TCP (the resolver retries there)', async () => {
    transports.length = 0;
    expect(await resolver.resolve4('big.db.svc.cluster.local')).toHaveLength(120);
    expect(transports).toEqual(['udp', 'tcp']);
  });

  it('answers several queries pipelined on one TCP connection', async () => {
    const socket = connect({ host: '127.0.0.1', port: server.port });
    await once(socket, 'connect');
    const frame = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b]);
    socket.write(
      Buffer.concat([
        frame(queryBytes({ name: 'front.db.svc.cluster.local', type: TYPE.A }, { id: 1 })),
        frame(queryBytes({ name: 'member-1.peers.db.svc.cluster.local', type: TYPE.A }, { id: 2 })),
      ]),
    );
    let data = Buffer.alloc(0);
    const replies = new Map<number, string[]>();
    for await (const chunk of socket) {
      data = Buffer.concat([data, chunk as Buffer]);
      while (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
        const m = decodeMessage(data.subarray(2, 2 + data.readUInt16BE(0)));
        data = data.subarray(2 + data.readUInt16BE(0));
        replies.set(
          m.id,
          m.answers.map((a) => ('address' in a ? a.address : '')),
        );
      }
      if (replies.size === 2) break;
    }
    socket.destroy();
    expect(replies).toEqual(
      new Map([
        [1, ['10.96.0.20']],
        [2, ['10.244.0.6']],
      ]),
    );
  });

  it('refuses a second server on the same address', async () => {
    await expect(
      serveDns({ host: '127.0.0.1', port: server.port, handler: async () => undefined }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});
