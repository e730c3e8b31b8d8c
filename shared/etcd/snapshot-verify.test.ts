import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { EtcdSnapshotError } from './errors.ts';
import { randomChunks } from './fixture.ts';
import { hasSnapshotHash, snapshotHashCheck, TrailingHash, verifySnapshotFile } from './snapshot-verify.ts';

// A stand-in database: whole 4 KiB pages, as bbolt writes them.
const db = randomBytes(4096 * 5);
const file = Buffer.concat([db, createHash('sha256').update(db).digest()]);
const dir = await mkdtemp(join(tmpdir(), 'etcd-verify-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('TrailingHash', () => {
  it('checks the last 32 bytes against the rest, whatever the chunking', () => {
    for (let seed = 1; seed < 50; seed++) {
      const h = new TrailingHash();
      for (const c of randomChunks(file, seed, seed * 7)) h.update(c);
      expect(h.verify()).toEqual({ size: file.length, dbSize: db.length });
    }
  });

  it('refuses a flipped bit and a file without hash', () => {
    const bad = Buffer.from(file);
    bad[100] = (bad[100] as number) ^ 1;
    const h = new TrailingHash();
    h.update(bad);
    expect(() => h.verify()).toThrow(EtcdSnapshotError);
    const none = new TrailingHash();
    none.update(db);
    expect(() => none.verify()).toThrow(/no SHA-256 at its end/);
  });

  it('uses etcd’s own test for a hash: size % 512 == 32', () => {
    expect([hasSnapshotHash(4096 + 32), hasSnapshotHash(4096), hasSnapshotHash(32)]).toEqual([
      true,
      false,
      true,
    ]);
  });
});

describe('verifySnapshotFile and snapshotHashCheck', () => {
  it('accept a good file and refuse a damaged one', async () => {
    const good = join(dir, 'good.db');
    await writeFile(good, file);
    await expect(verifySnapshotFile(good)).resolves.toEqual({ size: file.length, dbSize: db.length });
    const bad = join(dir, 'bad.db');
    await writeFile(bad, Buffer.concat([file.subarray(0, -1), Buffer.from([0])]));
    await expect(verifySnapshotFile(bad)).rejects.toMatchObject({ reason: 'SnapshotChecksum' });
  });

  it('pass bytes through unchanged and fail the pipeline at the end when damaged', async () => {
    const seen: Buffer[] = [];
    await pipeline(Readable.from(randomChunks(file, 3, 1000)), snapshotHashCheck(), async (s) => {
      for await (const c of s) seen.push(c as Buffer);
    });
    expect(Buffer.concat(seen).equals(file)).toBe(true);
    const damaged = Buffer.from(file);
    damaged[0] = (damaged[0] as number) ^ 0xff;
    await expect(
      pipeline(Readable.from([damaged]), snapshotHashCheck(), async (s) => {
        for await (const _ of s);
      }),
    ).rejects.toBeInstanceOf(EtcdSnapshotError);
  });
});
