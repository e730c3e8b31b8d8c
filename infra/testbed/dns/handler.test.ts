import { describe, expect, it } from 'vitest';
import { fixtureView, NS, queryBytes } from './fixtures.ts';
import type { Forwarder, Transport } from './forward.ts';
import { clusterDnsHandler } from './handler.ts';
import { decodeMessage, encodeMessage, RCODE, TYPE } from './message.ts';

/** Many ready endpoints: an answer too big for 512 bytes. */
const big = fixtureView({
  services: [{ metadata: { name: 'big', namespace: NS }, spec: { clusterIP: 'None', clusterIPs: ['None'] } }],
  slices: [
    {
      addressType: 'IPv4',
      metadata: { name: 'big-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'big' } },
      endpoints: Array.from({ length: 100 }, (_, i) => ({ addresses: [`10.244.1.${i + 1}`] })),
    },
  ],
});

const setup = (reply?: (query: Buffer, transport: Transport) => Buffer | undefined) => {
  const forwarded: { query: Buffer; transport: Transport }[] = [];
  const forwarder: Forwarder = {
    forward: async (query, transport) => {
      forwarded.push({ query, transport });
      return reply?.(query, transport);
    },
  };
  const handle = clusterDnsHandler({
    view: () => big,
    forwarder,
    lookup: { zone: 'cluster.local', ttl: 5, serial: 1 },
  });
  const ask = async (bytes: Buffer, transport: Transport = 'udp') => {
    const out = await handle(bytes, transport);
    return out && { bytes: out, message: decodeMessage(out) };
  };
  return { forwarded, ask, handle };
};

describe('cluster DNS handler', () => {
  it('answers cluster names itself: authoritative, same ID and question, RD kept', async () => {
    const { ask, forwarded } = setup();
    const r = await ask(
      queryBytes({ name: 'member-0.peers.db.svc.cluster.local', type: TYPE.A }, { id: 42 }),
    );
    expect(r?.message).toMatchObject({
      id: 42,
      qr: true,
      aa: true,
      rd: true,
      rcode: RCODE.NOERROR,
      tc: false,
    });
    expect(r?.message.questions).toEqual([
      { name: 'member-0.peers.db.svc.cluster.local', type: TYPE.A, class: 1 },
    ]);
    expect(r?.message.answers).toEqual([
      { name: 'member-0.peers.db.svc.cluster.local', ttl: 5, type: 'A', address: '10.244.0.5' },
    ]);
    expect(forwarded).toEqual([]);
  });

  it('relays other names to the upstream unchanged and returns its reply as it came', async () => {
    const upstream = Buffer.from('the upstream reply');
    const { forwarded, handle } = setup(() => upstream);
    const q = queryBytes({ name: 'registry.npmjs.org', type: TYPE.A });
    expect(await handle(q, 'tcp')).toBe(upstream);
    expect(forwarded).toEqual([{ query: q, transport: 'tcp' }]);
    // No upstream answered: SERVFAIL.
    const none = setup();
    expect((await none.ask(q))?.message).toMatchObject({ rcode: RCODE.SERVFAIL, aa: false, id: 0x1234 });
  });

  it('chases an ExternalName target upstream and answers the CNAME with its records', async () => {
    const { ask, forwarded } = setup((query) => {
      const m = decodeMessage(query);
      return encodeMessage({
        ...m,
        qr: true,
        ra: true,
        answers: [{ name: 'db.example.com', ttl: 60, type: 'A', address: '192.0.2.7' }],
      });
    });
    const r = await ask(queryBytes({ name: 'ext.db.svc.cluster.local', type: TYPE.A }));
    expect(decodeMessage(forwarded[0]?.query ?? Buffer.alloc(0)).questions).toEqual([
      { name: 'db.example.com', type: TYPE.A, class: 1 },
    ]);
    expect(r?.message.answers.map((a) => a.type)).toEqual(['CNAME', 'A']);
    // Nobody answered the chase: the CNAME is dropped, as CoreDNS does (NODATA).
    const silent = setup();
    const s = await silent.ask(queryBytes({ name: 'ext.db.svc.cluster.local', type: TYPE.A }));
    expect(s?.message).toMatchObject({ rcode: RCODE.NOERROR, answers: [] });
  });

  it('truncates a UDP answer that does not fit 512 bytes (or the EDNS size); TCP gets it whole', async () => {
    const { ask } = setup();
    const name = 'big.db.svc.cluster.local';
    const udp = await ask(queryBytes({ name, type: TYPE.A }));
    expect(udp?.message).toMatchObject({ tc: true, answers: [], rcode: RCODE.NOERROR });
    expect(udp?.bytes.length).toBeLessThanOrEqual(512);
    const tcp = await ask(queryBytes({ name, type: TYPE.A }), 'tcp');
    expect(tcp?.message.answers).toHaveLength(100);
    expect(tcp?.message.tc).toBe(false);
    const edns = await ask(queryBytes({ name, type: TYPE.A }, { edns: { udpSize: 4096 } }));
    expect(edns?.message).toMatchObject({ tc: true, edns: { udpSize: 1232, version: 0, dnssecOk: false } });
    const fits = await ask(
      queryBytes({ name: 'peers.db.svc.cluster.local', type: TYPE.A }, { edns: { udpSize: 4096 } }),
    );
    expect(fits?.message).toMatchObject({ tc: false, edns: { udpSize: 1232 } });
    expect(fits?.message.answers).toHaveLength(2);
  });

  it('answers malformed queries with FORMERR, other opcodes NOTIMP, EDNS 1 BADVERS; drops responses', async () => {
    const { ask, handle } = setup();
    const q = queryBytes({ name: 'front.db.svc.cluster.local', type: TYPE.A });
    expect((await ask(q.subarray(0, q.length - 3)))?.message).toMatchObject({
      rcode: RCODE.FORMERR,
      id: 0x1234,
    });
    expect(await handle(q.subarray(0, 5), 'udp')).toBeUndefined();
    const response = Buffer.from(q);
    response[2] = (response[2] ?? 0) | 0x80;
    expect(await handle(response, 'udp')).toBeUndefined();
    const notify = Buffer.from(q);
    notify[2] = ((notify[2] ?? 0) & 0x87) | (4 << 3);
    expect((await ask(notify))?.message.rcode).toBe(RCODE.NOTIMP);
    const two = Buffer.from(q);
    two.writeUInt16BE(0, 4);
    expect((await ask(two))?.message.rcode).toBe(RCODE.FORMERR);
    const v1 = queryBytes(
      { name: 'front.db.svc.cluster.local', type: TYPE.A },
      { edns: { udpSize: 1232, version: 1 } },
    );
    expect((await ask(v1))?.message.rcode).toBe(RCODE.BADVERS);
  });
});
