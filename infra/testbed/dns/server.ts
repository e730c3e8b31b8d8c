import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { isIPv6, type Socket, createServer as tcpServer } from 'node:net';
import type { DnsHandler } from './handler.ts';

export type DnsServer = {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
};

const TCP_IDLE_MS = 10_000;
/** A client pipelining more queries than this at once on one TCP connection is cut off. */
const TCP_MAX_INFLIGHT = 64;

/**
 * Serves `handler` on `host`:`port` over UDP and TCP (RFC 1035 4.2; TCP as RFC 7766 asks:
 * several queries per connection, replies as they are ready, idle connections closed). Port 0
 * picks a free port, the same for both.
 */
export const serveDns = async (o: {
  host: string;
  port: number;
  handler: DnsHandler;
  log?: (m: string) => void;
}): Promise<DnsServer> => {
  const log = o.log ?? (() => undefined);
  const udp = createSocket({ type: isIPv6(o.host) ? 'udp6' : 'udp4' });
  udp.on('message', (msg, from) => {
    o.handler(msg, 'udp').then(
      (reply) => reply && udp.send(reply, from.port, from.address),
      (error: unknown) => log(`cluster DNS: ${String(error)}`),
    );
  });
  udp.on('error', (error) => log(`cluster DNS: UDP: ${error.message}`));
  await bind(udp, o.host, o.port);
  const port = udp.address().port;

  const sockets = new Set<Socket>();
  const tcp = tcpServer((socket) => serveConnection(socket, o.handler, log, sockets));
  try {
    tcp.listen(port, o.host);
    await once(tcp, 'listening');
  } catch (error) {
    udp.close();
    throw error;
  }
  return {
    host: o.host,
    port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all([
        new Promise<void>((resolve) => udp.close(() => resolve())),
        new Promise<void>((resolve) => tcp.close(() => resolve())),
      ]);
    },
  };
};

const bind = (udp: UdpSocket, host: string, port: number) =>
  new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind({ address: host, port, exclusive: true }, () => {
      udp.off('error', reject);
      resolve();
    });
  });

const serveConnection = (
  socket: Socket,
  handler: DnsHandler,
  log: (m: string) => void,
  sockets: Set<Socket>,
) => {
  sockets.add(socket);
  let buffered = Buffer.alloc(0);
  let inflight = 0;
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2) {
      const size = buffered.readUInt16BE(0);
      if (buffered.length < 2 + size) break;
      const query = Buffer.from(buffered.subarray(2, 2 + size));
      buffered = buffered.subarray(2 + size);
      if (++inflight > TCP_MAX_INFLIGHT) {
        socket.destroy();
        return;
      }
      handler(query, 'tcp').then(
        (reply) => {
          inflight--;
          if (!reply || socket.destroyed) return;
          const length = Buffer.alloc(2);
          length.writeUInt16BE(reply.length);
          socket.write(Buffer.concat([length, reply]));
        },
        (error: unknown) => {
          inflight--;
          log(`cluster DNS: ${String(error)}`);
        },
      );
    }
  });
};
