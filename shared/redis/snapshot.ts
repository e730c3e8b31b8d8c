import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { encodeCommand, RespError } from './resp.ts';

/*
 * An RDB snapshot over the replication protocol, as `redis-cli --rdb` takes it: AUTH,
 * `REPLCONF capa eof` (so a diskless server may stream it), `REPLCONF rdb-only 1` (Redis 7+: the
 * snapshot and nothing after it; older servers refuse it, and we stop reading after the RDB),
 * then `SYNC`. The server's disk is never touched on a diskless server.
 */

/** The EOF mark of a diskless transfer is this many bytes (Redis: 40 random hex characters). */
export const EOF_MARK_LENGTH = 40;

/** What the server announced before the payload: its length, or the diskless EOF mark. */
export type PayloadHeader = { form: 'disk'; size: number } | { form: 'diskless'; size: undefined };

/** The SYNC reply is not what the replication protocol allows: not worth retrying on this server. */
export class SyncProtocolError extends Error {
  override readonly name = 'SyncProtocolError';
  readonly retry = false;
  readonly reason = 'SyncProtocolError';
}

/** A line longer than this before the payload is no SYNC reply (the header is ~50 bytes). */
const MAX_LINE = 1024;

type State =
  | { kind: 'replies'; left: number }
  | { kind: 'preamble' }
  | { kind: 'length'; left: number }
  | { kind: 'eof'; mark: Buffer; tail: Buffer }
  | { kind: 'done' };

export type ParserOutput = {
  /** Simple replies to the commands sent before SYNC, in order (string or RespError). */
  replies: (string | RespError)[];
  header?: PayloadHeader;
  /** Payload bytes, in order; views of the input where possible (no copy). */
  payload: Buffer[];
  /** The payload ended with this input; anything after it (a replication stream) is dropped. */
  done: boolean;
};

/**
 * Incremental parser of what a server sends on a replication connection: the simple replies to
 * the commands before SYNC, then newline keepalives while it prepares the snapshot, then either
 * `$<len>\r\n<payload>` or the diskless `$EOF:<mark>\r\n<payload><mark>`. Pure: feed chunks, get
 * payload views back. Holds at most one header line and the last 40 bytes of a diskless payload.
 */
export class SyncReplyParser {
  #state: State;
  #line: Buffer = Buffer.alloc(0);

  /** `replies`: how many simple replies (to AUTH, REPLCONF, …) come before the SYNC reply. */
  constructor(replies: number) {
    this.#state = replies > 0 ? { kind: 'replies', left: replies } : { kind: 'preamble' };
  }

  get done(): boolean {
    return this.#state.kind === 'done';
  }

  push(chunk: Buffer): ParserOutput {
    const out: ParserOutput = { replies: [], payload: [], done: false };
    let at = 0;
    while (at < chunk.length && this.#state.kind !== 'done') {
      const s = this.#state;
      if (s.kind === 'replies' || s.kind === 'preamble') {
        if (s.kind === 'preamble' && this.#line.length === 0) {
          // Keepalives: the server writes a newline now and then while it prepares the snapshot.
          while (at < chunk.length && chunk[at] === 0x0a) at++;
          if (at >= chunk.length) break;
        }
        const line = this.#takeLine(chunk, at);
        if (!line) break;
        at = line.next;
        if (s.kind === 'replies') {
          out.replies.push(simpleReply(line.text));
          this.#state = s.left > 1 ? { kind: 'replies', left: s.left - 1 } : { kind: 'preamble' };
        } else {
          out.header = this.#header(line.text);
        }
        continue;
      }
      if (s.kind === 'length') {
        const n = Math.min(s.left, chunk.length - at);
        if (n > 0) out.payload.push(chunk.subarray(at, at + n));
        at += n;
        s.left -= n;
        if (s.left === 0) this.#state = { kind: 'done' };
        continue;
      }
      if (s.kind === 'eof') {
        this.#eof(s, chunk.subarray(at), out.payload);
        at = chunk.length;
      }
    }
    out.done = this.#state.kind === 'done';
    return out;
  }

  /** A complete `\r\n`-terminated line starting at `at` (joined with earlier partial input). */
  #takeLine(chunk: Buffer, at: number): { text: string; next: number } | undefined {
    const nl = chunk.indexOf(0x0a, at);
    const part = chunk.subarray(at, nl < 0 ? chunk.length : nl + 1);
    if (this.#line.length + part.length > MAX_LINE)
      throw new SyncProtocolError(`a reply line longer than ${MAX_LINE} bytes: not a SYNC reply`);
    this.#line = this.#line.length === 0 ? Buffer.from(part) : Buffer.concat([this.#line, part]);
    if (nl < 0) return undefined;
    const text = this.#line.toString('latin1').replace(/\r?\n$/, '');
    this.#line = Buffer.alloc(0);
    return { text, next: nl + 1 };
  }

  #header(text: string): PayloadHeader {
    if (text.startsWith('-')) throw new RespError(text.slice(1));
    if (text.startsWith('$EOF:')) {
      const mark = Buffer.from(text.slice(5), 'latin1');
      if (mark.length !== EOF_MARK_LENGTH)
        throw new SyncProtocolError(`the EOF mark has ${mark.length} bytes, not ${EOF_MARK_LENGTH}`);
      this.#state = { kind: 'eof', mark, tail: Buffer.alloc(0) };
      return { form: 'diskless', size: undefined };
    }
    const m = /^\$(\d{1,15})$/.exec(text);
    if (!m) throw new SyncProtocolError(`unexpected SYNC reply ${JSON.stringify(text.slice(0, 80))}`);
    const size = Number(m[1]);
    this.#state = size === 0 ? { kind: 'done' } : { kind: 'length', left: size };
    return { form: 'disk', size };
  }

  /**
   * Diskless payload: everything but the last 40 bytes seen so far is payload; the transfer ends
   * when those 40 bytes are the mark. The server sends nothing after it (it waits for the
   * replica's first ACK, which never comes), so the mark ends a read, as Redis's replica assumes.
   */
  #eof(s: { mark: Buffer; tail: Buffer }, bytes: Buffer, payload: Buffer[]) {
    const L = EOF_MARK_LENGTH;
    if (bytes.length >= L) {
      if (s.tail.length > 0) payload.push(s.tail);
      if (bytes.length > L) payload.push(bytes.subarray(0, bytes.length - L));
      s.tail = Buffer.from(bytes.subarray(bytes.length - L));
    } else {
      const joined = Buffer.concat([s.tail, bytes]);
      const cut = Math.max(0, joined.length - L);
      if (cut > 0) payload.push(joined.subarray(0, cut));
      s.tail = joined.subarray(cut);
    }
    if (s.tail.length === L && s.tail.equals(s.mark)) this.#state = { kind: 'done' };
  }
}

const simpleReply = (text: string): string | RespError => {
  if (text.startsWith('+')) return text.slice(1);
  if (text.startsWith('-')) return new RespError(text.slice(1));
  throw new SyncProtocolError(`unexpected reply ${JSON.stringify(text.slice(0, 80))} before SYNC`);
};

/** Taking the snapshot from this server failed; another server (or a later try) may do. */
export class SnapshotError extends Error {
  override readonly name = 'SnapshotError';
  readonly retry = true;
  /** SourceUnreachable, SourceLost (dropped mid-stream), SourceRefused (an error reply), NotAnRdb. */
  readonly reason: string;

  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

export type SnapshotOptions = {
  host: string;
  port: number;
  password?: string;
  connectTimeoutMs?: number;
  /**
   * Nothing received, not even a keepalive, for this long while we are ready to read: the source
   * is gone without closing (a lost node). Time the consumer makes us wait does not count.
   */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  /** Bytes the stream buffers ahead of its consumer before it stops reading the socket. */
  highWaterMark?: number;
};

export type Snapshot = {
  /** The RDB file's bytes, exactly; errors if the transfer stops before its end. */
  readonly rdb: Readable;
  readonly header: PayloadHeader;
  /** The server took `REPLCONF rdb-only` (it sends the snapshot and nothing else). */
  readonly rdbOnly: boolean;
};

/** RDB files start with this (Valkey 9 writes its own name). */
const MAGICS = [Buffer.from('REDIS'), Buffer.from('VALKEY')];
/** An RDB ends with the EOF opcode and an 8-byte CRC64 (zeros when rdbchecksum is off). */
const RDB_EOF = 0xff;
const TRAILER = 9;

/** Payload is handed on in blocks of this size (the last may be shorter). */
const BLOCK = 256 * 1024;
/** Socket reads land in one buffer of this size, reused: a read allocates nothing. */
const READ_BUFFER = 64 * 1024;

/** Snapshot streams: each chunk is a block of its own that nothing else holds or writes. */
const handsOver = new WeakSet<Readable>();
/** Whether a consumer may release (free) each chunk of `r` once it used it. */
export const chunksHandedOver = (r: Readable): boolean => handsOver.has(r);

/**
 * Opens a replication connection and resolves once the server starts sending the snapshot
 * (after its fork and, for a disk-based transfer, the whole BGSAVE). The stream has backpressure:
 * when its consumer stops reading, the socket is paused and the server waits (a disk-based
 * transfer reads its file as we read; a diskless one blocks its child on the pipe). Memory held:
 * the stream's high-water mark plus one block. Reads go into one reused buffer and the payload is
 * copied into blocks of 256 KiB: a socket delivers a fast transfer in reads of ~20 KB, and a
 * buffer per read made work per chunk downstream and garbage for the collector (docs/backup.md).
 */
export const openSnapshot = (o: SnapshotOptions): Promise<Snapshot> =>
  new Promise<Snapshot>((resolve, reject) => {
    const where = `${o.host}:${o.port}`;
    const commands: string[][] = [
      ...(o.password ? [['AUTH', o.password]] : []),
      ['REPLCONF', 'capa', 'eof'],
      ['REPLCONF', 'rdb-only', '1'],
    ];
    const parser = new SyncReplyParser(commands.length);
    const idleMs = o.idleTimeoutMs ?? 30_000;
    let header: PayloadHeader | undefined;
    let rdbOnly = false;
    let received = 0;
    let replies = 0;
    let head = Buffer.alloc(0);
    let trailer = Buffer.alloc(0);
    let paused = false;
    let idle: NodeJS.Timeout | undefined;
    let finished = false;
    let block = Buffer.allocUnsafe(BLOCK);
    let filled = 0;

    const readBuffer = Buffer.allocUnsafe(READ_BUFFER);
    const socket: Socket = connect({
      host: o.host,
      port: o.port,
      onread: { buffer: readBuffer, callback: (n) => onRead(readBuffer.subarray(0, n)) },
    });
    const rdb = new Readable({
      highWaterMark: o.highWaterMark ?? 1024 * 1024,
      read() {
        if (!paused) return;
        paused = false;
        socket.resume();
        arm();
      },
      destroy(error, callback) {
        clearTimeout(idle);
        o.signal?.removeEventListener('abort', onAbort);
        socket.destroy();
        callback(error);
      },
    });
    handsOver.add(rdb);
    const fail = (error: Error) => {
      if (finished) return;
      finished = true;
      if (header) rdb.destroy(error);
      else {
        rdb.destroy();
        reject(error);
      }
    };
    const lost = () =>
      fail(
        new SnapshotError('SourceLost', `${where}: nothing received for ${idleMs / 1000}s; giving up on it`),
      );
    /** (Re)starts the idle clock; one timer, refreshed per read. */
    const arm = () => {
      if (idle) idle.refresh();
      else idle = setTimeout(lost, idleMs);
    };
    const onAbort = () => fail(o.signal?.reason instanceof Error ? o.signal.reason : new Error('aborted'));
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });

    const connectTimer = setTimeout(
      () => fail(new SnapshotError('SourceUnreachable', `${where}: connect timed out`)),
      o.connectTimeoutMs ?? 3000,
    );
    socket.once('connect', () => {
      clearTimeout(connectTimer);
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 5000);
      // One at a time: a server refuses SYNC while replies to earlier commands are unsent.
      socket.write(encodeCommand(commands[0] ?? ['SYNC']));
      arm();
    });
    socket.on('error', (e) => {
      clearTimeout(connectTimer);
      fail(
        new SnapshotError(
          header ? 'SourceLost' : 'SourceUnreachable',
          `${where}: ${e.message}${header ? ` after ${received} bytes of the snapshot` : ''}`,
          { cause: e },
        ),
      );
    });
    socket.on('close', () => {
      clearTimeout(connectTimer);
      fail(
        new SnapshotError(
          'SourceLost',
          header
            ? `${where} closed the connection after ${received}${header.size !== undefined ? ` of ${header.size}` : ''} bytes of the snapshot`
            : `${where} closed the connection before sending a snapshot`,
        ),
      );
    });

    /** The first and last bytes say whether this is a whole RDB file. */
    const check = (chunk: Buffer) => {
      if (head.length < 6) head = Buffer.concat([head, chunk.subarray(0, 6)]);
      trailer =
        chunk.length >= TRAILER
          ? Buffer.from(chunk.subarray(chunk.length - TRAILER))
          : Buffer.concat([trailer, chunk]).subarray(-TRAILER);
    };
    const complete = (): Error | undefined => {
      const magic = MAGICS.some((m) => head.subarray(0, m.length).equals(m));
      if (!magic || trailer.length < TRAILER || trailer[0] !== RDB_EOF)
        return new SnapshotError(
          'NotAnRdb',
          `${where} sent ${received} bytes that are not a complete RDB file (${magic ? 'no EOF opcode at its end' : 'no RDB header'})`,
        );
      return undefined;
    };
    /** Hands on the block filled so far; false when the consumer is behind. */
    const emit = (): boolean => {
      const b = filled === block.length ? block : block.subarray(0, filled);
      block = Buffer.allocUnsafe(BLOCK);
      filled = 0;
      return rdb.push(b);
    };

    /** One socket read; `chunk` is valid only until this returns. False pauses the socket. */
    const onRead = (chunk: Buffer): boolean => {
      if (finished) return false;
      if (!paused) arm();
      let out: ParserOutput;
      try {
        out = parser.push(chunk);
      } catch (error) {
        const e = error as Error;
        fail(
          error instanceof RespError
            ? new SnapshotError('SourceRefused', `${where} refused SYNC: ${e.message}`, { cause: e })
            : new SnapshotError('SyncProtocolError', `${where}: ${e.message}`, { cause: e }),
        );
        return false;
      }
      for (const r of out.replies) {
        const [name, arg] = commands[replies++] ?? [];
        if (name === 'AUTH' && r instanceof RespError) {
          fail(new SnapshotError('SourceRefused', `${where} refused AUTH: ${r.message}`, { cause: r }));
          return false;
        }
        if (arg === 'rdb-only') rdbOnly = !(r instanceof RespError);
        socket.write(encodeCommand(commands[replies] ?? ['SYNC']));
      }
      if (out.header && !header) {
        header = out.header;
        resolve({ rdb, header, rdbOnly });
      }
      let more = true;
      for (const p of out.payload) {
        received += p.length;
        check(p);
        // Copied now: the read buffer is reused by the next read.
        for (let at = 0; at < p.length; ) {
          const n = p.copy(block, filled, at);
          filled += n;
          at += n;
          if (filled === block.length) more = emit() && more;
        }
      }
      if (out.done) {
        finished = true;
        clearTimeout(idle);
        socket.destroy();
        const error = complete();
        if (error) rdb.destroy(error);
        else {
          if (filled > 0) emit();
          rdb.push(null);
        }
        return false;
      }
      if (!more) {
        // The consumer is behind: stop reading; the server waits. Its time is not ours to count.
        paused = true;
        clearTimeout(idle);
        idle = undefined;
        return false;
      }
      return true;
    };
  });
