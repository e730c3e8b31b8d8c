import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { LockLostError } from '../runtime/handler.ts';
import type { LoadedCluster } from './load.ts';
import type { Instance } from './probe.ts';
import { switchover } from './switchover.ts';

// A run that stalls while connecting (AUTH answered late) loses its lock meanwhile: it must not
// send FAILOVER once connected. A RESP server on a loopback address of its own, port 6379.
const HOST = '127.0.0.77';

describe('switchover, the lock lost while it connects', () => {
  it('never sends FAILOVER', async () => {
    const received: string[] = [];
    let lost = false;
    const sockets: Socket[] = [];
    const server = createServer((s) => {
      sockets.push(s);
      s.on('data', (d) => {
        const words = d
          .toString()
          .split('\r\n')
          .filter((w) => w && !/^[*$]/.test(w));
        received.push(words.join(' '));
        // AUTH is answered after the lease ran out.
        if (words[0] === 'AUTH')
          setTimeout(() => {
            lost = true;
            s.write('+OK\r\n');
          }, 100);
        else s.write('+OK\r\n');
      });
    });
    server.listen(6379, HOST);
    await once(server, 'listening');
    try {
      const at = (pod: string): Instance =>
        ({ pod, ordinal: 0, ip: HOST, podReady: true, terminating: false }) as Instance;
      await expect(
        switchover({
          cluster: {} as LoadedCluster,
          instances: [],
          from: at('r-0'),
          to: at('r-1'),
          password: 'pw',
          why: 'test',
          kube: {} as never,
          log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as never,
          recorder: { record: async () => {} },
          fence: () => {
            if (lost) throw new LockLostError('the lock on ns/r was lost');
          },
        }),
      ).rejects.toBeInstanceOf(LockLostError);
      expect(received).toEqual(['AUTH pw']);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
