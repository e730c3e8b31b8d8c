/** A tar stream that cannot be read: bad checksum, truncated, or a member type not supported. */
export class TarFormatError extends Error {
  override readonly name = 'TarFormatError';
  readonly retry = false; // the same bytes fail the same way
}

export const BLOCK = 512;

export type TarType = 'file' | 'dir' | 'symlink' | 'hardlink' | 'char' | 'block' | 'fifo';

/** One member, with pax and GNU long-name records already applied. */
export type TarEntry = {
  readonly path: string;
  readonly type: TarType;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly size: number;
  /** Seconds since the epoch. */
  readonly mtime: number;
  readonly linkpath: string;
};

/** A raw header: a member, or a record (pax `x`/`g`, GNU `L`/`K`) that changes the next one. */
export type RawHeader =
  | { readonly kind: 'end' }
  | { readonly kind: 'record'; readonly record: 'x' | 'g' | 'L' | 'K'; readonly size: number }
  | { readonly kind: 'entry'; readonly entry: TarEntry };

const TYPES: Readonly<Record<string, TarType>> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'char',
  '4': 'block',
  '5': 'dir',
  '6': 'fifo',
};

const text = (b: Buffer, off: number, len: number) => {
  const s = b.subarray(off, off + len);
  const nul = s.indexOf(0);
  return (nul < 0 ? s : s.subarray(0, nul)).toString('utf8');
};

/** Octal ASCII, or GNU base-256 when the high bit of the first byte is set. */
const num = (b: Buffer, off: number, len: number, what: string): number => {
  if (((b[off] ?? 0) & 0x80) !== 0) {
    let v = (b[off] ?? 0) & 0x7f;
    for (let i = off + 1; i < off + len; i++) v = v * 256 + (b[i] ?? 0);
    if (!Number.isSafeInteger(v)) throw new TarFormatError(`tar header: ${what} is too large`);
    return v;
  }
  const s = text(b, off, len).trim();
  if (s === '') return 0;
  if (!/^[0-7]+$/.test(s)) throw new TarFormatError(`tar header: ${what} "${s}" is not octal`);
  return Number.parseInt(s, 8);
};

/** Parses one 512-byte header block; `pending` carries the pax/GNU overrides for this member. */
export const parseHeader = (b: Buffer, pending: Readonly<Record<string, string>> = {}): RawHeader => {
  if (b.length !== BLOCK) throw new TarFormatError('tar stream ends inside a header');
  if (b.every((x) => x === 0)) return { kind: 'end' };
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (b[i] ?? 0);
  if (sum !== num(b, 148, 8, 'checksum')) throw new TarFormatError('tar header checksum mismatch');
  const flag = String.fromCharCode(b[156] ?? 0);
  const size = num(b, 124, 12, 'size');
  if (flag === 'x' || flag === 'g' || flag === 'L' || flag === 'K')
    return { kind: 'record', record: flag, size };
  const type = TYPES[flag];
  if (!type) throw new TarFormatError(`tar member ${text(b, 0, 100)}: type "${flag}" is not supported`);
  // POSIX ustar has a name prefix; GNU tar ("ustar  ") uses that space for other fields.
  const posix = b.subarray(257, 263).toString('latin1') === 'ustar\0';
  const prefix = posix ? text(b, 345, 155) : '';
  const name = text(b, 0, 100);
  const num10 = (key: string, fallback: number) =>
    pending[key] !== undefined ? Number(pending[key]) : fallback;
  return {
    kind: 'entry',
    entry: {
      path: pending.path ?? (prefix ? `${prefix}/${name}` : name),
      type,
      mode: num(b, 100, 8, 'mode') & 0o7777,
      uid: num10('uid', num(b, 108, 8, 'uid')),
      gid: num10('gid', num(b, 116, 8, 'gid')),
      size: type === 'file' ? num10('size', size) : 0,
      mtime: Math.floor(num10('mtime', num(b, 136, 12, 'mtime'))),
      linkpath: pending.linkpath ?? text(b, 157, 100),
    },
  };
};

/** pax extended header records: `<length> <key>=<value>\n`, lengths counted in bytes. */
export const parsePax = (data: Buffer): Record<string, string> => {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const length = Number(data.subarray(at, space).toString('latin1'));
    if (space < 0 || !Number.isInteger(length) || length <= 0 || at + length > data.length)
      throw new TarFormatError('malformed pax record');
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq < 0) throw new TarFormatError('malformed pax record');
    out[record.slice(0, eq)] = record.slice(eq + 1);
    at += length;
  }
  return out;
};

/** The overrides a record gives the member after it (GNU names end with NULs). */
export const recordOverrides = (record: 'x' | 'g' | 'L' | 'K', data: Buffer): Record<string, string> => {
  if (record === 'L') return { path: text(data, 0, data.length) };
  if (record === 'K') return { linkpath: text(data, 0, data.length) };
  // A global header's defaults (`g`) apply to no field this reader keeps per member.
  return record === 'x' ? parsePax(data) : {};
};

const padded = (size: number) => Math.ceil(size / BLOCK) * BLOCK;

/** Bytes from an async source, taken in exact amounts. */
class Bytes {
  readonly #it: AsyncIterator<Buffer>;
  #chunks: Buffer[] = [];
  #length = 0;
  #eof = false;

  constructor(source: AsyncIterable<Buffer>) {
    this.#it = source[Symbol.asyncIterator]();
  }

  async #fill(n: number) {
    while (this.#length < n && !this.#eof) {
      const r = await this.#it.next();
      if (r.done) this.#eof = true;
      else if (r.value.length > 0) {
        this.#chunks.push(r.value);
        this.#length += r.value.length;
      }
    }
  }

  /** Exactly n bytes, or fewer at the end of the source. */
  async read(n: number): Promise<Buffer> {
    await this.#fill(n);
    const parts: Buffer[] = [];
    for await (const part of this.take(Math.min(n, this.#length), { taken: 0 })) parts.push(part);
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** The next n bytes as chunks; `progress` counts what was taken, so a caller can skip the rest. */
  async *take(n: number, progress: { taken: number }): AsyncGenerator<Buffer> {
    while (progress.taken < n) {
      if (this.#length === 0) await this.#fill(1);
      const chunk = this.#chunks[0];
      if (!chunk) throw new TarFormatError('tar stream ends inside a member');
      const want = n - progress.taken;
      const part = chunk.length <= want ? chunk : chunk.subarray(0, want);
      if (part === chunk) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(want);
      this.#length -= part.length;
      progress.taken += part.length;
      yield part;
    }
  }

  async skip(n: number) {
    for await (const _ of this.take(n, { taken: 0 })) {
      // discarded
    }
  }
}

/** A member and its content; read `data` before asking for the next member, or it is skipped. */
export type TarMember = { readonly entry: TarEntry; readonly data: AsyncIterable<Buffer> };

/** Reads a tar stream member by member (ustar, GNU and pax formats), checking each header. */
export async function* readTar(source: AsyncIterable<Buffer>): AsyncGenerator<TarMember> {
  const bytes = new Bytes(source);
  let pending: Record<string, string> = {};
  for (;;) {
    const block = await bytes.read(BLOCK);
    if (block.length === 0) return; // no end-of-archive blocks: accepted, as GNU tar does
    const header = parseHeader(block, pending);
    if (header.kind === 'end') return;
    if (header.kind === 'record') {
      if (header.size > 1024 * 1024) throw new TarFormatError('tar extended header larger than 1 MiB');
      const data = await bytes.read(padded(header.size));
      if (data.length < padded(header.size)) throw new TarFormatError('tar stream ends inside a header');
      pending = { ...pending, ...recordOverrides(header.record, data.subarray(0, header.size)) };
      continue;
    }
    pending = {};
    const progress = { taken: 0 };
    yield { entry: header.entry, data: bytes.take(header.entry.size, progress) };
    await bytes.skip(header.entry.size - progress.taken);
    await bytes.skip(padded(header.entry.size) - header.entry.size);
  }
}
