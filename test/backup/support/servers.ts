import { copyFile, link, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../../../infra/testbed/paths.ts';
import { startProcess, waitReady } from '../../../infra/testbed/process/managed-process.ts';
import { canConnect, freePort } from '../../../infra/testbed/process/ports.ts';
import { binaryClient } from './resp.ts';

/** The server builds the test bed's images run (infra/testbed/image-table). */
export const SERVER_BINARIES = {
  'redis-7.0': '/usr/bin/redis-server',
  'redis-6.2': join(cacheDir(), 'images', 'redis-6.2', 'redis-server'),
  'valkey-8.1': join(cacheDir(), 'images', 'valkey-8.1', 'valkey-server'),
} as const;
export type ServerBuild = keyof typeof SERVER_BINARIES;

export type TestServer = Awaited<ReturnType<typeof startServer>>;

/**
 * A redis-server (or valkey-server) of its own on 127.0.0.1, in a temp dir: for data-path tests
 * that need no cluster. `args` are extra command-line directives; `rdb` a file to start from.
 */
export const startServer = async (
  o: { build?: ServerBuild; args?: string[]; password?: string; rdb?: string } = {},
) => {
  const dir = await mkdtemp(join(tmpdir(), 'twbed-backup-redis-'));
  // A hard link where it can: redis-server never writes its RDB in place (a temp file, then a
  // rename), so the caller's file stays as it was, and a 1 GiB copy does not count as loading
  // time in the restore bench's native baseline.
  if (o.rdb)
    await link(o.rdb, join(dir, 'dump.rdb')).catch(() => copyFile(o.rdb as string, join(dir, 'dump.rdb')));
  const port = await freePort();
  const proc = startProcess({
    name: `redis-${port}`,
    command: SERVER_BINARIES[o.build ?? 'redis-7.0'],
    args: [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--dbfilename',
      'dump.rdb',
      '--save',
      '',
      '--appendonly',
      'no',
      ...(o.password ? ['--requirepass', o.password] : []),
      ...(o.args ?? []),
    ],
    logFile: join(dir, 'server.log'),
    testbedId: 'backup-tests',
  });
  await waitReady(proc, () => canConnect('127.0.0.1', port));
  const client = () =>
    binaryClient({ host: '127.0.0.1', port, ...(o.password ? { password: o.password } : {}) });
  // Accepting connections is not serving: a server loads its RDB first (PING says LOADING).
  await waitReady(proc, async () => {
    const c = await client();
    try {
      return (await c.text('PING')) === 'PONG';
    } finally {
      c.close();
    }
  });
  return {
    host: '127.0.0.1',
    port,
    dir,
    proc,
    client,
    stop: async () => {
      await proc.stop(5000);
      await rm(dir, { recursive: true, force: true });
    },
  };
};
