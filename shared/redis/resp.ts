/** RESP2 values as they come off the wire. Errors are values here; the client turns them into throws. */
export type RespValue = string | number | null | RespError | RespValue[];

export class RespError extends Error {
  override readonly name = 'RespError';
  /** The error's prefix word, e.g. ERR, WRONGTYPE, LOADING, NOAUTH. */
  readonly code: string;
  /** LOADING, BUSY, TRYAGAIN, MASTERDOWN mean "the server will answer later". */
  readonly retry: boolean;

  constructor(message: string) {
    super(message);
    this.code = message.split(' ')[0] ?? 'ERR';
    this.retry = ['LOADING', 'BUSY', 'TRYAGAIN', 'MASTERDOWN', 'NOREPLICAS'].includes(this.code);
  }
}

export const encodeCommand = (args: readonly (string | Buffer | number)[]): Buffer => {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
};

/**
 * Incremental RESP2 parser: feed it chunks, take complete values. Keeps only the unparsed tail,
 * so memory is bounded by the largest single reply.
 */
export class RespParser {
  #buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
  }

  /** Complete values parsed so far, in order. */
  *values(): Generator<RespValue> {
    for (;;) {
      const r = this.#parse(0);
      if (!r) return;
      this.#buf = this.#buf.subarray(r.end);
      yield r.value;
    }
  }

  #line(at: number): { text: string; next: number } | undefined {
    const end = this.#buf.indexOf('\r\n', at);
    if (end < 0) return undefined;
    return { text: this.#buf.toString('utf8', at, end), next: end + 2 };
  }

  #parse(at: number): { value: RespValue; end: number } | undefined {
    if (at >= this.#buf.length) return undefined;
    const type = String.fromCharCode(this.#buf[at] ?? 0);
    const line = this.#line(at + 1);
    if (!line) return undefined;
    switch (type) {
      case '+':
        return { value: line.text, end: line.next };
      case '-':
        return { value: new RespError(line.text), end: line.next };
      case ':':
        return { value: Number(line.text), end: line.next };
      case '$': {
        const len = Number(line.text);
        if (len < 0) return { value: null, end: line.next };
        if (this.#buf.length < line.next + len + 2) return undefined;
        return { value: this.#buf.toString('utf8', line.next, line.next + len), end: line.next + len + 2 };
      }
      case '*': {
        const n = Number(line.text);
        if (n < 0) return { value: null, end: line.next };
        const items: RespValue[] = [];
        let pos = line.next;
        for (let i = 0; i < n; i++) {
          const item = this.#parse(pos);
          if (!item) return undefined;
          items.push(item.value);
          pos = item.end;
        }
        return { value: items, end: pos };
      }
      default:
        throw new RespError(`ERR protocol: unexpected reply type byte ${JSON.stringify(type)}`);
    }
  }
}
