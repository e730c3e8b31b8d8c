import { isIPv4, isIPv6 } from 'node:net';
import { Reader, Writer } from './bytes.ts';
import { DnsFormatError } from './errors.ts';

/** The record types the cluster DNS reads or writes (RFC 1035, 2782, 3596, 6891). */
export const TYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
} as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  /** Extended (EDNS): the query's EDNS version is not supported. */
  BADVERS: 16,
} as const;

export const CLASS_IN = 1;

export type Question = { readonly name: string; readonly type: number; readonly class: number };

type Owner = { readonly name: string; readonly ttl: number };
export type ResourceRecord = Owner &
  (
    | { readonly type: 'A' | 'AAAA'; readonly address: string }
    | { readonly type: 'CNAME' | 'PTR' | 'NS'; readonly target: string }
    | {
        readonly type: 'SRV';
        readonly priority: number;
        readonly weight: number;
        readonly port: number;
        readonly target: string;
      }
    | { readonly type: 'TXT'; readonly texts: readonly string[] }
    | {
        readonly type: 'SOA';
        readonly mname: string;
        readonly rname: string;
        readonly serial: number;
        readonly refresh: number;
        readonly retry: number;
        readonly expire: number;
        readonly minimum: number;
      }
    /** Any other type, its data as it came. */
    | { readonly type: 'OTHER'; readonly code: number; readonly data: Buffer }
  );

/** EDNS(0) from the OPT pseudo-record (RFC 6891). */
export type Edns = { readonly udpSize: number; readonly version: number; readonly dnssecOk: boolean };

export type Message = {
  readonly id: number;
  readonly qr: boolean;
  readonly opcode: number;
  readonly aa: boolean;
  readonly tc: boolean;
  readonly rd: boolean;
  readonly ra: boolean;
  /** With EDNS, the extended code (BADVERS = 16) is split between the header and the OPT record. */
  readonly rcode: number;
  readonly questions: readonly Question[];
  readonly answers: readonly ResourceRecord[];
  readonly authorities: readonly ResourceRecord[];
  readonly additionals: readonly ResourceRecord[];
  readonly edns?: Edns | undefined;
};

const HEADER = 12;

/** Encodes a message, compressing names where RFC 1035 and RFC 3597 allow it (never SRV targets). */
export const encodeMessage = (m: Message): Buffer => {
  const w = new Writer();
  w.u16(m.id);
  w.u16(
    (m.qr ? 0x8000 : 0) |
      ((m.opcode & 0xf) << 11) |
      (m.aa ? 0x400 : 0) |
      (m.tc ? 0x200 : 0) |
      (m.rd ? 0x100 : 0) |
      (m.ra ? 0x80 : 0) |
      (m.rcode & 0xf),
  );
  w.u16(m.questions.length);
  w.u16(m.answers.length);
  w.u16(m.authorities.length);
  w.u16(m.additionals.length + (m.edns ? 1 : 0));
  for (const q of m.questions) {
    w.name(q.name, true);
    w.u16(q.type);
    w.u16(q.class);
  }
  for (const rr of [...m.answers, ...m.authorities, ...m.additionals]) writeRecord(w, rr);
  if (m.edns) {
    w.u8(0); // root
    w.u16(TYPE.OPT);
    w.u16(m.edns.udpSize);
    w.u32(((m.rcode >> 4) << 24) | ((m.edns.version & 0xff) << 16) | (m.edns.dnssecOk ? 0x8000 : 0));
    w.u16(0);
  } else if (m.rcode > 0xf) {
    throw new DnsFormatError(`rcode ${m.rcode} needs EDNS`);
  }
  return w.done();
};

const writeRecord = (w: Writer, rr: ResourceRecord) => {
  w.name(rr.name, true);
  w.u16(rr.type === 'OTHER' ? rr.code : TYPE[rr.type]);
  w.u16(CLASS_IN);
  w.u32(rr.ttl);
  const lengthAt = w.reserve16();
  switch (rr.type) {
    case 'A':
      if (!isIPv4(rr.address)) throw new DnsFormatError(`A record with address ${rr.address}`);
      for (const part of rr.address.split('.')) w.u8(Number(part));
      break;
    case 'AAAA':
      w.bytes(ipv6Bytes(rr.address));
      break;
    case 'CNAME':
    case 'PTR':
    case 'NS':
      w.name(rr.target, true);
      break;
    case 'SRV':
      w.u16(rr.priority);
      w.u16(rr.weight);
      w.u16(rr.port);
      w.name(rr.target, false);
      break;
    case 'TXT':
      for (const t of rr.texts) {
        const b = Buffer.from(t, 'latin1');
        if (b.length > 255) throw new DnsFormatError('TXT string longer than 255 bytes');
        w.u8(b.length);
        w.bytes(b);
      }
      break;
    case 'SOA':
      w.name(rr.mname, true);
      w.name(rr.rname, true);
      for (const n of [rr.serial, rr.refresh, rr.retry, rr.expire, rr.minimum]) w.u32(n);
      break;
    case 'OTHER':
      w.bytes(rr.data);
      break;
  }
  w.fill16(lengthAt, w.length - lengthAt - 2);
};

/** Decodes a whole message; anything malformed throws DnsFormatError. */
export const decodeMessage = (buf: Buffer): Message => {
  const r = new Reader(buf);
  const header = decodeHeader(buf);
  r.at = HEADER;
  const questions: Question[] = [];
  for (let i = 0; i < header.qdcount; i++) {
    const name = r.name();
    questions.push({ name, type: r.u16(), class: r.u16() });
  }
  let edns: Edns | undefined;
  let extendedRcode = 0;
  const section = (count: number) => {
    const out: ResourceRecord[] = [];
    for (let i = 0; i < count; i++) {
      const rr = readRecord(r);
      if ('edns' in rr) {
        if (edns) throw new DnsFormatError('more than one OPT record');
        edns = rr.edns;
        extendedRcode = rr.extendedRcode;
      } else out.push(rr);
    }
    return out;
  };
  const answers = section(header.ancount);
  const authorities = section(header.nscount);
  const additionals = section(header.arcount);
  return {
    id: header.id,
    qr: header.qr,
    opcode: header.opcode,
    aa: header.aa,
    tc: header.tc,
    rd: header.rd,
    ra: header.ra,
    rcode: (extendedRcode << 4) | header.rcode,
    questions,
    answers,
    authorities,
    additionals,
    edns,
  };
};

/** The fixed 12-byte header, readable even when the rest of the message is not. */
export const decodeHeader = (buf: Buffer) => {
  if (buf.length < HEADER) throw new DnsFormatError(`message of ${buf.length} bytes has no header`);
  const flags = buf.readUInt16BE(2);
  return {
    id: buf.readUInt16BE(0),
    qr: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    aa: (flags & 0x400) !== 0,
    tc: (flags & 0x200) !== 0,
    rd: (flags & 0x100) !== 0,
    ra: (flags & 0x80) !== 0,
    rcode: flags & 0xf,
    qdcount: buf.readUInt16BE(4),
    ancount: buf.readUInt16BE(6),
    nscount: buf.readUInt16BE(8),
    arcount: buf.readUInt16BE(10),
  };
};

const readRecord = (r: Reader): ResourceRecord | { edns: Edns; extendedRcode: number } => {
  const name = r.name();
  const code = r.u16();
  const klass = r.u16();
  const ttl = r.u32();
  const length = r.u16();
  const end = r.at + length;
  if (end > r.buf.length) throw new DnsFormatError(`record ${name} runs past the message`);
  if (code === TYPE.OPT) {
    if (name !== '') throw new DnsFormatError('OPT record not owned by the root');
    r.at = end;
    return {
      edns: { udpSize: klass, version: (ttl >>> 16) & 0xff, dnssecOk: (ttl & 0x8000) !== 0 },
      extendedRcode: ttl >>> 24,
    };
  }
  const owner = { name, ttl };
  let rr: ResourceRecord;
  if (code === TYPE.A && length === 4) {
    rr = { ...owner, type: 'A', address: [...r.buf.subarray(r.at, end)].join('.') };
  } else if (code === TYPE.AAAA && length === 16) {
    const words = [];
    for (let i = 0; i < 16; i += 2) words.push(r.buf.readUInt16BE(r.at + i).toString(16));
    rr = { ...owner, type: 'AAAA', address: words.join(':') };
  } else if (code === TYPE.CNAME || code === TYPE.PTR || code === TYPE.NS) {
    const type = code === TYPE.CNAME ? 'CNAME' : code === TYPE.PTR ? 'PTR' : 'NS';
    rr = { ...owner, type, target: r.name() };
  } else if (code === TYPE.SRV) {
    rr = { ...owner, type: 'SRV', priority: r.u16(), weight: r.u16(), port: r.u16(), target: r.name() };
  } else if (code === TYPE.TXT) {
    const texts: string[] = [];
    while (r.at < end) {
      const n = r.u8();
      texts.push(r.take(n).toString('latin1'));
    }
    rr = { ...owner, type: 'TXT', texts };
  } else if (code === TYPE.SOA) {
    const mname = r.name();
    const rname = r.name();
    const [serial, refresh, retry, expire, minimum] = [r.u32(), r.u32(), r.u32(), r.u32(), r.u32()] as const;
    rr = { ...owner, type: 'SOA', mname, rname, serial, refresh, retry, expire, minimum };
  } else {
    rr = { ...owner, type: 'OTHER', code, data: Buffer.from(r.buf.subarray(r.at, end)) };
  }
  if (rr.type !== 'A' && rr.type !== 'AAAA' && rr.type !== 'OTHER' && r.at !== end)
    throw new DnsFormatError(`record ${name}: data length ${length} does not match its content`);
  r.at = end;
  return rr;
};

const ipv6Bytes = (address: string): Buffer => {
  if (!isIPv6(address) || address.includes('.'))
    throw new DnsFormatError(`AAAA record with address ${address}`);
  const [head = '', tail] = address.split('::');
  const words = (s: string) => (s === '' ? [] : s.split(':').map((x) => Number.parseInt(x, 16)));
  const left = words(head);
  const right = tail === undefined ? [] : words(tail);
  const all = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  all.forEach((word, i) => {
    out.writeUInt16BE(word, i * 2);
  });
  return out;
};
