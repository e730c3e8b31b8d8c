import { connect } from 'node:net';
import { encodeCommand } from '../../../shared/redis/resp.ts';

/** A reply with bulk strings as Buffers: binary values compare byte for byte. */
export type Reply = Buffer | number | null | Error | Reply[];

/** Parses one reply at `at`, or undefined when `buf` does not hold all of it yet. */
const parse = (buf: Buffer, at: number): { value: Reply; end: number } | undefined => {
  const nl = buf.indexOf('\r\n', at);
  if (nl < 0) return undefined;
  const type = String.fromCharCode(buf[at] ?? 0);
  const line = buf.toString('latin1', at + 1, nl);
  const next = nl + 2;
  if (type === '+') return { value: Buffer.from(line, 'latin1'), end: next };
  if (type === '-') return { value: new Error(line), end: next };
  if (type === ':') return { value: Number(line), end: next };
  if (type === '$') {
    const n = Number(line);
    if (n < 0) return { value: null, end: next };
    if (buf.length < next + n + 2) return undefined;
    return { value: buf.subarray(next, next + n), end: next + n + 2 };
  }
  if (type === '*') {
    const n = Number(line);
    if (n < 0) return { value: null, end: next };
    const items: Reply[] = [];
    let pos = next;
    for (let i = 0; i < n; i++) {
      const item = parse(buf, pos);
      if (!item) return undefined;
      items.push(item.value);
      pos = item.end;
    }
    return { value: items, end: pos };
  }
  throw new Error(`unexpected reply type ${type}`);
};

/**
 * A test-only pipelining RESP2 client that keeps bulk strings binary (the product's client
 * decodes them as UTF-8, enough for INFO and roles but not for comparing data sets).
 */
export const binaryClient = async (o: { host: string; port: number; password?: string }) => {
  const socket = connect({ host: o.host, port: o.port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let buf: Buffer = Buffer.alloc(0);
  const queue: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  socket.on('data', (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      const r = parse(buf, 0);
      if (!r) break;
      buf = buf.subarray(r.end);
      queue.shift()?.resolve(r.value);
    }
  });
  const closed = (e: Error) => {
    for (const p of queue.splice(0)) p.reject(e);
  };
  socket.on('error', closed);
  socket.on('close', () => closed(new Error('connection closed')));
  /** Sends a command; error replies reject. */
  const call = (...args: (string | number | Buffer)[]) =>
    new Promise<Reply>((resolve, reject) => {
      queue.push({ resolve: (r) => (r instanceof Error ? reject(r) : resolve(r)), reject });
      socket.write(encodeCommand(args));
    });
  if (o.password) await call('AUTH', o.password);
  return {
    call,
    /** A reply as text (simple and bulk strings). */
    text: async (...args: (string | number | Buffer)[]) => String(await call(...args)),
    close: () => socket.destroy(),
  };
};
export type BinaryClient = Awaited<ReturnType<typeof binaryClient>>;
