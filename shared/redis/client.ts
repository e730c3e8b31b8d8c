import { connect, type Socket } from 'node:net';
import { encodeCommand, RespError, RespParser, type RespValue } from './resp.ts';

/** The connection to a Redis server failed or closed; worth retrying later. */
export class RedisConnectionError extends Error {
  override readonly name = 'RedisConnectionError';
  readonly retry = true;
}

export type RedisClientOptions = {
  host: string;
  port: number;
  password?: string;
  connectTimeoutMs?: number;
  /** Per-command timeout: a hung server must not hang a handler. */
  commandTimeoutMs?: number;
};

export type RedisClient = {
  /** Sends a command; resolves its reply, rejects RespError replies. Commands pipeline in order. */
  command(...args: (string | number | Buffer)[]): Promise<RespValue>;
  close(): void;
  [Symbol.dispose](): void;
};

type Pending = { resolve: (v: RespValue) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };

/** A minimal pipelining RESP2 client: enough for control commands (INFO, ROLE, REPLICAOF, WAIT). */
export const connectRedis = async (o: RedisClientOptions): Promise<RedisClient> => {
  const socket: Socket = await new Promise((resolve, reject) => {
    const s = connect({ host: o.host, port: o.port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new RedisConnectionError(`connect to ${o.host}:${o.port} timed out`));
    }, o.connectTimeoutMs ?? 3000);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      reject(new RedisConnectionError(`connect to ${o.host}:${o.port}: ${e.message}`, { cause: e }));
    });
  });
  socket.setNoDelay(true);
  const parser = new RespParser();
  const queue: Pending[] = [];
  let closedError: Error | undefined;

  const failAll = (error: Error) => {
    closedError ??= error;
    for (const p of queue.splice(0)) {
      clearTimeout(p.timer);
      p.reject(error);
    }
  };
  socket.on('data', (chunk) => {
    parser.push(chunk);
    try {
      for (const value of parser.values()) {
        const p = queue.shift();
        if (!p) continue;
        clearTimeout(p.timer);
        if (value instanceof RespError) p.reject(value);
        else p.resolve(value);
      }
    } catch (error) {
      failAll(error as Error);
      socket.destroy();
    }
  });
  socket.on('error', (e) =>
    failAll(new RedisConnectionError(`${o.host}:${o.port}: ${e.message}`, { cause: e })),
  );
  socket.on('close', () => failAll(new RedisConnectionError(`${o.host}:${o.port}: connection closed`)));

  const command = (...args: (string | number | Buffer)[]) =>
    new Promise<RespValue>((resolve, reject) => {
      if (closedError) return reject(closedError);
      const timer = setTimeout(() => {
        failAll(new RedisConnectionError(`${o.host}:${o.port}: ${String(args[0])} timed out`));
        socket.destroy();
      }, o.commandTimeoutMs ?? 10_000);
      queue.push({ resolve, reject, timer });
      socket.write(encodeCommand(args));
    });

  const close = () => {
    socket.destroy();
  };
  if (o.password) {
    try {
      await command('AUTH', o.password);
    } catch (error) {
      close();
      throw error;
    }
  }
  return { command, close, [Symbol.dispose]: close };
};
