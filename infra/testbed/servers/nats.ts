import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bin } from '../paths.ts';
import { type Component, component } from '../process/component.ts';
import { startProcess, waitReady } from '../process/managed-process.ts';
import { freePort } from '../process/ports.ts';

export type Nats = { readonly url: string; readonly monitorUrl: string; readonly server: Component };

/**
 * nats-server with file-backed JetStream; data survives a kill and restart. It listens on `host`,
 * the pod bridge's address, so that functions running as pods reach it as local ones do.
 */
export const startNats = async (o: { dir: string; testbedId: string; host: string }): Promise<Nats> => {
  const dir = join(o.dir, 'nats');
  await mkdir(join(dir, 'jetstream'), { recursive: true });
  const [port, monitorPort] = [await freePort(o.host), await freePort(o.host)];
  const config = join(dir, 'nats.conf');
  await writeFile(
    config,
    [
      'server_name: tideway-testbed',
      `listen: ${o.host}:${port}`,
      `http: ${o.host}:${monitorPort}`,
      'jetstream {',
      `  store_dir: "${join(dir, 'jetstream')}"`,
      '  max_memory_store: 256MB',
      '  max_file_store: 2GB',
      '}',
      '',
    ].join('\n'),
  );
  const monitorUrl = `http://${o.host}:${monitorPort}`;
  const server = component('nats', async () => {
    const proc = startProcess({
      name: 'nats',
      command: bin('nats-server'),
      args: ['-c', config],
      logFile: join(dir, 'nats.log'),
      testbedId: o.testbedId,
    });
    await waitReady(proc, async () => (await fetch(`${monitorUrl}/healthz?js-enabled-only=true`)).ok);
    return proc;
  });
  await server.start();
  return { url: `nats://${o.host}:${port}`, monitorUrl, server };
};
