import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSnapshot, SnapshotError } from '../../shared/redis/snapshot.ts';
import { until } from '../support/bed.ts';
import { contentOf, expectSameContent, fillRandom, populate } from './support/dataset.ts';
import { type ServerBuild, startServer, type TestServer } from './support/servers.ts';

/**
 * RDB snapshots over the replication protocol from real servers (Redis 7.0, Redis 6.2, Valkey
 * 8.1), in both transfer forms: the RDB received, loaded into a fresh server of the same build,
 * holds the same logical content.
 */
describe('snapshot over the replication protocol', () => {
  let dir = '';
  const servers: TestServer[] = [];
  const start = async (...a: Parameters<typeof startServer>) => {
    const s = await startServer(...a);
    servers.push(s);
    return s;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'twbed-snapshot-'));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await rm(dir, { recursive: true, force: true });
  });

  /** Snapshot of `source` into a file, loaded into a fresh server: same content. */
  const roundTrip = async (
    source: TestServer,
    build: ServerBuild,
    o: { password?: string; meanwhile?: () => Promise<void> } = {},
  ) => {
    const c = await source.client();
    const expected = await contentOf(c);
    c.close();
    const snap = await openSnapshot({
      host: source.host,
      port: source.port,
      ...(o.password ? { password: o.password } : {}),
    });
    await o.meanwhile?.();
    const file = join(dir, `${build}-${source.port}-${Date.now()}.rdb`);
    await pipeline(snap.rdb, createWriteStream(file));
    if (snap.header.form === 'disk') expect((await stat(file)).size).toBe(snap.header.size);
    const loaded = await start({ build, rdb: file });
    const l = await loaded.client();
    expectSameContent(await contentOf(l), expected);
    l.close();
    return snap;
  };

  const builds: ServerBuild[] = ['redis-7.0', 'redis-6.2', 'valkey-8.1'];
  for (const build of builds) {
    for (const diskless of [false, true]) {
      it(`${build}, ${diskless ? 'diskless (EOF mark)' : 'disk-based (length prefix)'}: the RDB holds every key`, async () => {
        const password = `pw-${build}`;
        const source = await start({
          build,
          password,
          args: ['--repl-diskless-sync', diskless ? 'yes' : 'no', '--repl-diskless-sync-delay', '0'],
        });
        const c = await source.client();
        await populate(c, { seed: build });
        c.close();
        const snap = await roundTrip(source, build, { password });
        expect(snap.header.form).toBe(diskless ? 'diskless' : 'disk');
        // Redis 6.2.14 takes `REPLCONF rdb-only` too (older servers refuse it: see below).
        expect(snap.rdbOnly).toBe(true);
      });
    }
  }

  it('stops at the end of the RDB when the server refuses REPLCONF and goes on with its replication stream', async () => {
    const source = await start({ args: ['--repl-diskless-sync', 'no'] });
    const c = await source.client();
    await populate(c);
    // As a server before rdb-only refuses it (here: every REPLCONF, so no EOF form either).
    await c.call('ACL', 'SETUSER', 'default', '-replconf');
    const snap = await roundTrip(source, 'redis-7.0', {
      // Written after the snapshot was taken: they follow the RDB on the wire, and are no part of it.
      meanwhile: async () => {
        for (let i = 0; i < 100; i++) await c.call('SET', `after:${i}`, 'x'.repeat(1000));
      },
    });
    c.close();
    expect(snap).toMatchObject({ rdbOnly: false, header: { form: 'disk' } });
  });

  it('holds back when its consumer is slow: the stream buffers no more than its high-water mark', async () => {
    const source = await start({ args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'] });
    const c = await source.client();
    // 40 MiB of incompressible values: far more than the buffers along the way.
    await fillRandom(c, 40);
    c.close();
    const highWaterMark = 256 * 1024;
    const snap = await openSnapshot({ host: source.host, port: source.port, highWaterMark });
    let most = 0;
    let total = 0;
    await pipeline(
      snap.rdb,
      new Writable({
        highWaterMark: 1,
        write(chunk: Buffer, _e, done) {
          total += chunk.length;
          most = Math.max(most, snap.rdb.readableLength);
          setImmediate(done);
        },
      }),
    );
    expect(total).toBeGreaterThan(40_000_000);
    // One socket read may land on top of a full buffer before the socket is paused.
    expect(most).toBeLessThanOrEqual(highWaterMark + 256 * 1024);
  });

  it('errors when the server goes away before the end of the RDB', async () => {
    for (const diskless of [false, true]) {
      const source = await start({
        args: ['--repl-diskless-sync', diskless ? 'yes' : 'no', '--repl-diskless-sync-delay', '0'],
      });
      const c = await source.client();
      await fillRandom(c, 20);
      c.close();
      const snap = await openSnapshot({ host: source.host, port: source.port, highWaterMark: 64 * 1024 });
      // Not read: the server is held back mid-transfer; then it dies.
      await until('the transfer to start', async () => (snap.rdb.readableLength > 0 ? true : undefined));
      source.proc.kill('SIGKILL');
      let received = 0;
      const error = await pipeline(
        snap.rdb,
        new Writable({
          write(chunk: Buffer, _e, done) {
            received += chunk.length;
            done();
          },
        }),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SnapshotError);
      expect(error).toMatchObject({ reason: 'SourceLost', retry: true });
      expect((error as Error).message).toMatch(/closed the connection after \d+/);
      expect(received).toBeLessThan(20_000_000);
    }
  });

  it('says why a server refuses: a wrong password, a replica without its master', async () => {
    const source = await start({ password: 'right' });
    const wrong = await openSnapshot({ host: source.host, port: source.port, password: 'wrong' }).catch(
      (e: unknown) => e,
    );
    expect(wrong).toMatchObject({ name: 'SnapshotError', reason: 'SourceRefused' });
    expect((wrong as Error).message).toMatch(/refused AUTH: WRONGPASS/);

    const orphan = await start({ args: ['--replicaof', '127.0.0.1', '1'] });
    const refused = await openSnapshot({ host: orphan.host, port: orphan.port }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'SnapshotError', reason: 'SourceRefused' });
    expect((refused as Error).message).toMatch(/NOMASTERLINK/);

    const nobody = await openSnapshot({ host: '127.0.0.1', port: 1 }).catch((e: unknown) => e);
    expect(nobody).toMatchObject({ name: 'SnapshotError', reason: 'SourceUnreachable' });
  });
});
