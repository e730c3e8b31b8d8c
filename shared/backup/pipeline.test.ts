import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ObjectStore } from './object-store.ts';
import { openStored, storeSnapshot } from './pipeline.ts';

/** Keeps what is uploaded, copied as the upload sees it (a real one copies into its parts). */
const memoryStore = () => {
  const objects = new Map<string, Buffer>();
  const store = {
    upload: async (key: string, body: AsyncIterable<Buffer>) => {
      const parts: Buffer[] = [];
      for await (const c of body) parts.push(Buffer.from(c));
      objects.set(key, Buffer.concat(parts));
      return { size: objects.get(key)?.length ?? 0, parts: 1 };
    },
  } as unknown as ObjectStore;
  return { store, objects };
};

describe('storeSnapshot', () => {
  it('stores what it is given, hashed, and never touches the caller’s buffers', async () => {
    const rdb = Buffer.concat([randomBytes(2 * 1024 * 1024), Buffer.alloc(1024 * 1024, 'x')]);
    const chunks = Array.from({ length: 12 }, (_, i) => rdb.subarray(i * 262144, (i + 1) * 262144));
    const { store, objects } = memoryStore();
    const stored = await storeSnapshot({
      rdb: Readable.from(chunks),
      store,
      key: 'k',
      compression: 'zstd',
      partSize: () => 5 * 1024 * 1024,
    });
    const object = objects.get('k') ?? Buffer.alloc(0);
    expect(stored).toMatchObject({ rdbSize: rdb.length, size: object.length });
    expect(stored.sha256).toBe(createHash('sha256').update(object).digest('hex'));
    expect(zstdDecompressSync(object).equals(rdb)).toBe(true);
    // Not the data path's own memory: never released, still whole.
    expect(chunks.every((c) => c.length === 262144)).toBe(true);
    expect(rdb.length).toBe(3 * 1024 * 1024);
  });
});

describe('openStored', () => {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  /** Serves one object in 16 KiB pieces, as a download arrives. */
  const serving = (object: Buffer) =>
    ({
      url: (key: string) => `s3://bench/${key}`,
      download: async () =>
        Readable.from(
          Array.from({ length: Math.ceil(object.length / 16384) }, (_, i) =>
            object.subarray(i * 16384, (i + 1) * 16384),
          ),
        ),
    }) as unknown as ObjectStore;
  const read = async (stream: Readable) => {
    const got: Buffer[] = [];
    for await (const c of stream as AsyncIterable<Buffer>) got.push(c);
    return Buffer.concat(got);
  };
  const rdb = Buffer.concat([Buffer.from('REDIS0010'), randomBytes(200 * 1024)]);

  it('stops the download when its reader stops, even after the decompressor ended', async () => {
    // gzip's output ends with its member; the zeros after it are still on their way: the reader
    // leaving must stop them (openStored's comment says so; a review asked whether it does).
    const compressed = gzipSync(rdb);
    let sent = 0;
    let bodyDestroyed = false;
    const store = {
      url: (key: string) => `s3://bench/${key}`,
      download: async () => {
        const body = Readable.from(
          (async function* () {
            yield compressed;
            for (; sent < 2000; sent++) {
              await new Promise((r) => setTimeout(r, 1));
              yield Buffer.alloc(16384);
            }
          })(),
        );
        body.on('close', () => {
          bodyDestroyed = true;
        });
        return body;
      },
    } as unknown as ObjectStore;
    const opened = await openStored({ store, key: 'k', compression: 'gzip', sha256: sha(compressed) });
    let got = 0;
    for await (const c of opened as AsyncIterable<Buffer>) {
      got += c.length;
      if (got >= rdb.length) break; // all of the RDB, then the reader leaves
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(bodyDestroyed).toBe(true);
    const after = sent;
    await new Promise((r) => setTimeout(r, 100));
    expect(sent).toBe(after);
    expect(sent).toBeLessThan(2000);
  });

  it('fails as soon as the object runs past its recorded size, without downloading the rest', async () => {
    const compressed = gzipSync(rdb);
    let sent = 0;
    const store = {
      url: (key: string) => `s3://bench/${key}`,
      download: async () =>
        Readable.from(
          (async function* () {
            yield compressed;
            for (; sent < 2000; sent++) yield Buffer.alloc(16384);
          })(),
        ),
    } as unknown as ObjectStore;
    const opened = await openStored({
      store,
      key: 'k',
      compression: 'gzip',
      sha256: sha(compressed),
      size: compressed.length,
    });
    await expect(read(opened)).rejects.toMatchObject({
      name: 'IntegrityError',
      reason: 'SizeMismatch',
      message: `s3://bench/k holds more than ${compressed.length} bytes, not the ${compressed.length} stored`,
    });
    // The stream's buffers hold a few chunks ahead, not the 2,000 that were on offer.
    expect(sent).toBeLessThan(50);
  });

  it('ends only after the checksum matched, even when the decompressor ends before its input', async () => {
    // gzip takes zero bytes after its member as padding and ends its output there: a changed
    // object, the same RDB with zeros after it, must still fail — before its end is seen.
    for (const [compression, compressed] of [
      ['gzip', gzipSync(rdb)],
      ['zstd', zstdCompressSync(rdb)],
    ] as const) {
      const changed = Buffer.concat([compressed, Buffer.alloc(256 * 1024)]);
      const opened = await openStored({
        store: serving(changed),
        key: 'k',
        compression,
        sha256: sha(compressed),
        size: changed.length,
      });
      const error = await read(opened).then(
        () => undefined,
        (e: unknown) => e,
      );
      // zstd may also fail to decode the zeros as a next frame: an error either way, never an end.
      expect(error, compression).toBeInstanceOf(Error);
      if (compression === 'gzip')
        expect(error).toMatchObject({ name: 'IntegrityError', reason: 'ChecksumMismatch' });
      // The object as stored reads whole.
      const whole = await openStored({
        store: serving(compressed),
        key: 'k',
        compression,
        sha256: sha(compressed),
      });
      expect((await read(whole)).equals(rdb), compression).toBe(true);
    }
  });
});
