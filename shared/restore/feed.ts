import { randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { RespParser, type RespValue } from '../redis/resp.ts';

/** A restore that cannot go on as it is; `retry` says whether trying again may help. */
export class FeedError extends Error {
  override readonly name = 'FeedError';
  readonly reason: string;
  readonly retry: boolean;
  constructor(reason: string, message: string, retry: boolean, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.retry = retry;
  }
}

/**
 * A source's error as the feed reports it: a typed one keeps its reason and whether to retry (an
 * object that fails its checksum — IntegrityError — fails the same way on every read: no retry),
 * anything else is a source that failed and may do better next time.
 */
const asFeedError = (error: Error): FeedError => {
  if (error instanceof FeedError) return error;
  const typed = error as { reason?: unknown; retry?: unknown };
  return new FeedError(
    typeof typed.reason === 'string' ? typed.reason : 'SourceFailed',
    error.message,
    typed.retry !== false,
    { cause: error },
  );
};

export type Feed = {
  /** Tell the target `REPLICAOF <host> <port>`. */
  readonly host: string;
  readonly port: number;
  /** The replication id the target continues from once loaded (offset 0 of it holds the RDB). */
  readonly replid: string;
  /** Resolves once a whole RDB went out to the target (it then loads it); rejects when it cannot. */
  readonly sent: Promise<{ bytes: number }>;
  close(): Promise<void>;
};

/** Commands a replica sends before PSYNC are short: more than this unparsed is not a replica. */
const MAX_HANDSHAKE_BYTES = 64 * 1024;
const CRLF = '\r\n';
const PING = Buffer.from(`*1${CRLF}$4${CRLF}PING${CRLF}`);

const sameSecret = (given: string, want: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** The socket can take more, or is gone; no listener is left behind either way. */
const drained = (socket: Socket) =>
  new Promise<void>((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });

/** The peer's IPv4 address as a Service or pod IP is written (without `::ffff:`). */
const peerOf = (s: Socket) => (s.remoteAddress ?? '').replace(/^::ffff:/, '');

/**
 * The master side of Redis replication, for one RDB: the target server is told `REPLICAOF` this
 * feed, connects as a replica, authenticates with its masterauth, asks for a sync and is sent the
 * RDB as a full resynchronization — which a server loads natively, replacing its data set, every
 * type and TTL included, in its own memory and at its own speed. The RDB is streamed with
 * backpressure (`open` is called per transfer, so a transfer that broke can be redone). Only
 * `allowFrom` may connect, and only with `password`: nobody else can read the data from the port.
 * After the transfer the feed only sends keepalive PINGs (as a master does) until it is closed:
 * the caller waits for the target to finish loading, then promotes it (`REPLICAOF NO ONE`).
 */
export const startFeed = async (o: {
  /** Address to listen on, reachable by the target (a pod IP, the test bed's bridge address). */
  host: string;
  allowFrom: string;
  password: string;
  open: () => Promise<{ rdb: Readable; size?: number }>;
  /** Transfers to try before giving up (a target that drops mid-transfer reconnects on its own). */
  attempts?: number;
  pingMs?: number;
  onProgress?: (bytes: number) => void;
  /** The replication id to serve (40 hex characters); random when not given. */
  replid?: string;
}): Promise<Feed> => {
  const replid = o.replid ?? randomBytes(20).toString('hex');
  const attempts = o.attempts ?? 3;
  const sockets = new Set<Socket>();
  let started = 0;
  let done = false;
  let settle!: { resolve: (v: { bytes: number }) => void; reject: (e: Error) => void };
  const sent = new Promise<{ bytes: number }>((resolve, reject) => {
    settle = { resolve, reject };
  });
  sent.catch(() => undefined); // the caller may close before awaiting it
  let ping: NodeJS.Timeout | undefined;

  const transfer = async (socket: Socket, eofCapable: boolean) => {
    started++;
    const { rdb, size } = await o.open();
    socket.write(`+FULLRESYNC ${replid} 0${CRLF}`);
    const mark = randomBytes(20).toString('hex'); // 40 characters, as Redis's own
    socket.write(size !== undefined ? `$${size}${CRLF}` : eofCapable ? `$EOF:${mark}${CRLF}` : '');
    if (size === undefined && !eofCapable)
      throw new FeedError('TargetTooOld', 'the target cannot take a transfer of unknown length', false);
    let bytes = 0;
    for await (const chunk of rdb as AsyncIterable<Buffer>) {
      if (socket.destroyed) throw new FeedError('TargetLost', 'the target dropped the transfer', true);
      bytes += chunk.length;
      if (size !== undefined && bytes > size)
        throw new FeedError('SizeMismatch', `the RDB is longer than the ${size} bytes announced`, false);
      if (!socket.write(chunk)) await drained(socket);
      o.onProgress?.(bytes);
    }
    if (size !== undefined && bytes !== size)
      throw new FeedError('SizeMismatch', `the RDB has ${bytes} bytes, ${size} were announced`, false);
    if (size === undefined) socket.write(mark);
    return bytes;
  };

  const serve = (socket: Socket) => {
    if (done || peerOf(socket) !== o.allowFrom) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const parser = new RespParser();
    let pending = 0;
    let authed = false;
    let eofCapable = false;
    let syncing = false;
    const reply = (text: string) => socket.write(text);
    socket.on('data', (chunk: Buffer) => {
      if (syncing) return; // REPLCONF ACKs: a master answers none of them
      pending += chunk.length;
      if (pending > MAX_HANDSHAKE_BYTES) return socket.destroy();
      parser.push(chunk);
      for (const value of parser.values()) {
        pending = 0;
        const args = Array.isArray(value) ? value.map((v: RespValue) => String(v)) : [];
        const name = (args[0] ?? '').toUpperCase();
        if (name === 'PING') reply(`+PONG${CRLF}`);
        else if (name === 'AUTH') {
          authed = sameSecret(args.at(-1) ?? '', o.password);
          if (!authed) {
            reply(`-WRONGPASS invalid password${CRLF}`);
            socket.end();
            return;
          }
          reply(`+OK${CRLF}`);
        } else if (!authed) {
          reply(`-NOAUTH Authentication required.${CRLF}`);
        } else if (name === 'REPLCONF') {
          if (args.slice(1).some((a, i, all) => a.toLowerCase() === 'capa' && all[i + 1] === 'eof'))
            eofCapable = true;
          reply(`+OK${CRLF}`);
        } else if (name === 'PSYNC' || name === 'SYNC') {
          syncing = true;
          if (started >= attempts) {
            reply(`-ERR the restore gave up after ${attempts} transfers${CRLF}`);
            socket.end();
            return;
          }
          transfer(socket, eofCapable).then(
            (bytes) => {
              ping ??= setInterval(() => {
                for (const s of sockets) s.write(PING);
              }, o.pingMs ?? 1000);
              settle.resolve({ bytes });
            },
            (error: Error) => {
              socket.destroy();
              const final = !(error instanceof FeedError && error.retry) || started >= attempts;
              if (final) settle.reject(asFeedError(error));
            },
          );
          return;
        } else reply(`-ERR unknown command '${name}' for a restore feed${CRLF}`);
      }
    });
  };

  const server = createServer(serve);
  server.listen(0, o.host);
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    host: o.host,
    port,
    replid,
    sent,
    close: async () => {
      done = true;
      clearInterval(ping);
      for (const s of sockets) s.destroy();
      settle.reject(new FeedError('Closed', 'the feed was closed before a transfer completed', true));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
