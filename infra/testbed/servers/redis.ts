import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Component, component } from '../process/component.ts';
import { startProcess, waitReady } from '../process/managed-process.ts';
import { canConnect, freePort } from '../process/ports.ts';

export type HostRedis = {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly server: Component;
};

/** Debian's redis-server on 127.0.0.1, for tests of data paths that need no cluster. */
export const startHostRedis = async (o: {
  dir: string;
  testbedId: string;
  binary?: string;
}): Promise<HostRedis> => {
  const dir = join(o.dir, 'redis');
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const server = component('redis', async () => {
    const proc = startProcess({
      name: 'redis',
      command: o.binary ?? '/usr/bin/redis-server',
      args: ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'no'],
      logFile: join(dir, 'redis.log'),
      testbedId: o.testbedId,
    });
    await waitReady(proc, () => canConnect('127.0.0.1', port));
    return proc;
  });
  await server.start();
  return { url: `redis://127.0.0.1:${port}`, host: '127.0.0.1', port, server };
};
