import { DnsFormatError } from './errors.ts';
import { nameLabels, readName } from './name.ts';

/** Writes a message into a growing buffer, remembering where each name suffix went (RFC 1035 4.1.4). */
export class Writer {
  private buf = Buffer.alloc(512);
  length = 0;
  private readonly offsets = new Map<string, number>();

  private ensure(n: number) {
    if (this.length + n > 65535) throw new DnsFormatError('message longer than 65535 bytes');
    if (this.length + n <= this.buf.length) return;
    const bigger = Buffer.alloc(Math.min(65535, Math.max(this.buf.length * 2, this.length + n)));
    this.buf.copy(bigger);
    this.buf = bigger;
  }
  u8(n: number) {
    this.ensure(1);
    this.buf.writeUInt8(n, this.length);
    this.length += 1;
  }
  u16(n: number) {
    this.ensure(2);
    this.buf.writeUInt16BE(n, this.length);
    this.length += 2;
  }
  u32(n: number) {
    this.ensure(4);
    this.buf.writeUInt32BE(n >>> 0, this.length);
    this.length += 4;
  }
  bytes(b: Buffer) {
    this.ensure(b.length);
    b.copy(this.buf, this.length);
    this.length += b.length;
  }
  reserve16(): number {
    this.u16(0);
    return this.length - 2;
  }
  fill16(at: number, n: number) {
    this.buf.writeUInt16BE(n, at);
  }
  /** Writes a name; with `compress`, a suffix written before becomes a pointer to it. */
  name(name: string, compress: boolean) {
    const labels = nameLabels(name);
    for (let i = 0; i < labels.length; i++) {
      const key = labels
        .slice(i)
        .map((l) => l.toString('latin1'))
        .join('\0');
      const seen = this.offsets.get(key);
      if (compress && seen !== undefined) {
        this.u16(0xc000 | seen);
        return;
      }
      if (this.length < 0x4000 && !this.offsets.has(key)) this.offsets.set(key, this.length);
      const label = labels[i] as Buffer;
      this.u8(label.length);
      this.bytes(label);
    }
    this.u8(0);
  }
  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.length));
  }
}

/** Reads a message front to back; running past its end is a DnsFormatError. */
export class Reader {
  at = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  private need(n: number) {
    if (this.at + n > this.buf.length) throw new DnsFormatError(`message ends at ${this.buf.length}`);
  }
  u8() {
    this.need(1);
    return this.buf.readUInt8(this.at++);
  }
  u16() {
    this.need(2);
    const v = this.buf.readUInt16BE(this.at);
    this.at += 2;
    return v;
  }
  u32() {
    this.need(4);
    const v = this.buf.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }
  take(n: number) {
    this.need(n);
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
  name() {
    const { name, next } = readName(this.buf, this.at);
    this.at = next;
    return name;
  }
}
