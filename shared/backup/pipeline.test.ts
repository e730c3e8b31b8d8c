import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { zstdDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ObjectStore } from './object-store.ts';
import { storeSnapshot } from './pipeline.ts';

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
