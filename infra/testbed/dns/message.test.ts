import { describe, expect, it } from 'vitest';
import { DnsFormatError } from './errors.ts';
import { queryBytes } from './fixtures.ts';
import { decodeMessage, encodeMessage, type Message, RCODE, type ResourceRecord, TYPE } from './message.ts';
import { nameLabels, readName } from './name.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const ascii = (s: string) => Buffer.from(s, 'latin1').toString('hex');

const response = (m: Partial<Message>): Message => ({
  id: 7,
  qr: true,
  opcode: 0,
  aa: true,
  tc: false,
  rd: true,
  ra: true,
  rcode: 0,
  questions: [],
  answers: [],
  authorities: [],
  additionals: [],
  ...m,
});

describe('DNS message codec', () => {
  it('writes a query byte for byte as RFC 1035 lays it out', () => {
    expect(queryBytes({ name: 'example.com', type: TYPE.A })).toEqual(
      hex(`1234 0100 0001 0000 0000 0000 07${ascii('example')} 03${ascii('com')} 00 0001 0001`),
    );
  });

  it('reads a query with EDNS: the question, the buffer size and the DO bit', () => {
    const bytes = Buffer.concat([
      hex(`abcd 0120 0001 0000 0000 0001 03${ascii('www')} 00 001c 0001`),
      hex('00 0029 04d0 00008000 0000'),
    ]);
    const m = decodeMessage(bytes);
    expect(m).toMatchObject({ id: 0xabcd, qr: false, rd: true, opcode: 0, rcode: 0 });
    expect(m.questions).toEqual([{ name: 'www', type: TYPE.AAAA, class: 1 }]);
    expect(m.edns).toEqual({ udpSize: 1232, version: 0, dnssecOk: true });
    expect(m.additionals).toEqual([]);
  });

  it('round-trips every record type it knows, and keeps others as bytes', () => {
    const records: ResourceRecord[] = [
      { name: 'a.b', ttl: 5, type: 'A', address: '10.96.0.1' },
      { name: 'a.b', ttl: 5, type: 'AAAA', address: 'fd00:0:0:0:0:0:0:5' },
      { name: 'a.b', ttl: 5, type: 'CNAME', target: 'c.d' },
      { name: '1.0.96.10.in-addr.arpa', ttl: 5, type: 'PTR', target: 'a.b' },
      { name: '_p._tcp.a.b', ttl: 5, type: 'SRV', priority: 0, weight: 50, port: 2380, target: 'm-0.a.b' },
      { name: 'v.b', ttl: 28800, type: 'TXT', texts: ['1.1.0', ''] },
      {
        name: 'b',
        ttl: 5,
        type: 'SOA',
        mname: 'ns.dns.b',
        rname: 'hostmaster.b',
        serial: 1,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: 5,
      },
      { name: 'a.b', ttl: 1, type: 'OTHER', code: 99, data: Buffer.from([1, 2, 3]) },
    ];
    const m = response({
      questions: [{ name: 'a.b', type: TYPE.ANY, class: 1 }],
      answers: records.slice(0, 5),
      authorities: records.slice(5, 7),
      additionals: records.slice(7),
    });
    expect(decodeMessage(encodeMessage(m))).toEqual({ ...m, edns: undefined });
  });

  it('writes IPv6 addresses with :: in full', () => {
    const bytes = encodeMessage(
      response({ answers: [{ name: 'x', ttl: 5, type: 'AAAA', address: 'fd00::5' }] }),
    );
    expect(bytes.subarray(-16)).toEqual(hex('fd00 0000 0000 0000 0000 0000 0000 0005'));
  });

  it('compresses owner names to the question, but never an SRV target (RFC 2782)', () => {
    const bytes = encodeMessage(
      response({
        questions: [{ name: '_p._tcp.s.ns.svc.cluster.local', type: TYPE.SRV, class: 1 }],
        answers: [
          {
            name: '_p._tcp.s.ns.svc.cluster.local',
            ttl: 5,
            type: 'SRV',
            priority: 0,
            weight: 100,
            port: 1,
            target: 'm.s.ns.svc.cluster.local',
          },
        ],
        additionals: [{ name: 'm.s.ns.svc.cluster.local', ttl: 5, type: 'A', address: '10.0.0.1' }],
      }),
    );
    const answerAt = 12 + '_p._tcp.s.ns.svc.cluster.local'.length + 2 + 4;
    expect(bytes.subarray(answerAt, answerAt + 2)).toEqual(hex('c00c'));
    const target = bytes.indexOf(hex(`01${ascii('m')}01${ascii('s')}`));
    expect(target).toBeGreaterThan(answerAt);
    // The additional A record's owner points back at the SRV target written in full.
    expect(bytes.readUInt16BE(bytes.length - 16)).toBe(0xc000 | target);
    expect(decodeMessage(bytes).additionals[0]?.name).toBe('m.s.ns.svc.cluster.local');
  });

  it('puts an extended rcode in the OPT record, and refuses one without EDNS', () => {
    const m = response({ rcode: RCODE.BADVERS, edns: { udpSize: 1232, version: 0, dnssecOk: false } });
    const bytes = encodeMessage(m);
    expect(bytes.readUInt16BE(2) & 0xf).toBe(0);
    expect(decodeMessage(bytes).rcode).toBe(RCODE.BADVERS);
    expect(() => encodeMessage({ ...m, edns: undefined })).toThrow(DnsFormatError);
  });

  it('keeps odd label bytes through escapes: a dot, a backslash, a space', () => {
    const bytes = Buffer.concat([hex('03'), Buffer.from('a.b'), hex('02'), Buffer.from(' \\'), hex('00')]);
    const { name, next } = readName(bytes, 0);
    expect(name).toBe('a\\.b.\\032\\\\');
    expect(next).toBe(bytes.length);
    expect(nameLabels(name).map((l) => l.toString('latin1'))).toEqual(['a.b', ' \\']);
    expect(nameLabels('example.com.')).toHaveLength(2);
    expect(nameLabels('')).toEqual([]);
  });

  it('refuses malformed names and messages', () => {
    const q = queryBytes({ name: 'example.com', type: TYPE.A });
    // A pointer forward (or to itself) would let a message loop the reader.
    const loop = Buffer.concat([q.subarray(0, 12), hex('c00c 0001 0001')]);
    expect(() => decodeMessage(loop)).toThrow(/does not point backwards/);
    expect(() => decodeMessage(q.subarray(0, q.length - 1))).toThrow(DnsFormatError);
    expect(() => decodeMessage(q.subarray(0, 8))).toThrow(/no header/);
    expect(() => decodeMessage(Buffer.concat([q.subarray(0, 12), hex('05 6162'), hex('00')]))).toThrow(
      /past the message/,
    );
    expect(() => nameLabels(`${'a'.repeat(64)}.com`)).toThrow(/longer than 63/);
    expect(() => nameLabels(Array(130).fill('ab').join('.'))).toThrow(/longer than 255/);
    expect(() => nameLabels('a..b')).toThrow(/empty label/);
    expect(() =>
      encodeMessage(response({ answers: [{ name: 'x', ttl: 1, type: 'A', address: '::1' }] })),
    ).toThrow(DnsFormatError);
  });
});
