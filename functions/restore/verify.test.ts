import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Compression } from '../../shared/backup/compression.ts';
import type { ObjectStore } from '../../shared/backup/object-store.ts';
import { storeSnapshot } from '../../shared/backup/pipeline.ts';
import { FeedError } from '../../shared/restore/feed.ts';
import type { Resolved } from './source.ts';
import { transferFailure, verifySource } from './verify.ts';

/** An object store in memory: the data path's rules, without a server. */
const memoryStore = (): ObjectStore & { objects: Map<string, Buffer> } => {
  const objects = new Map<string, Buffer>();
  return {
    objects,
    url: (key) => `mem://${key}`,
    upload: async (key, body) => {
      const parts: Buffer[] = [];
      // As the ObjectStore contract says: a chunk is the store's only until it asks for the next.
      for await (const c of body) parts.push(Buffer.from(c));
      objects.set(key, Buffer.concat(parts));
      return { size: objects.get(key)?.length ?? 0, parts: 1 };
    },
    put: async (key, body) => {
      objects.set(key, body);
    },
    get: async (key) => objects.get(key),
    download: async (key) => Readable.from([...chunks(objects.get(key) ?? Buffer.alloc(0))]),
    head: async (key) => (objects.has(key) ? { size: objects.get(key)?.length ?? 0 } : undefined),
    delete: async (key) => {
      objects.delete(key);
    },
    abortUnfinished: async () => 0,
    unfinished: async () => [],
  };
};
const chunks = function* (b: Buffer) {
  for (let i = 0; i < b.length; i += 4096) yield b.subarray(i, i + 4096);
};

const stored = async (rdb: Buffer, o: { compression: Compression; key?: Buffer }) => {
  const store = memoryStore();
  const s = await storeSnapshot({
    rdb: Readable.from([...chunks(rdb)]),
    store,
    key: 'k',
    compression: o.compression,
    encryptionKey: o.key,
    partSize: () => 5 * 1024 * 1024,
  });
  const resolved: Resolved = {
    store: {
      store,
      prefix: '',
      compression: o.compression,
      ...(o.key ? { encryption: { key: o.key, secretName: 'k' } } : {}),
    },
    source: {
      describe: 'backup b',
      key: 'k',
      sha256: s.sha256,
      size: s.size,
      rdbSize: s.rdbSize,
      compression: o.compression,
      redis: { product: 'redis', version: '7.0.15' },
    },
  };
  return { store, resolved };
};

const rdb = Buffer.concat([Buffer.from('REDIS0010'), randomBytes(200_000)]);

describe('verifying a stored RDB before anything is touched', () => {
  it('reads every kind of object through: the format and size of the RDB inside', async () => {
    for (const compression of ['zstd', 'gzip', 'none'] as const)
      for (const key of [undefined, randomBytes(32)]) {
        const { resolved } = await stored(rdb, { compression, ...(key ? { key } : {}) });
        let progress = 0;
        const v = await verifySource(resolved, { onProgress: (n) => (progress = n) });
        expect(v).toEqual({ format: { magic: 'REDIS', version: 10 }, rdbBytes: rdb.length });
        expect(progress).toBe(rdb.length);
      }
  });

  it('reports one changed byte as ChecksumMismatch, also where it first shows as a chunk that does not decrypt or decompress', async () => {
    for (const [compression, key] of [
      ['none', undefined],
      ['zstd', undefined],
      ['gzip', undefined],
      ['zstd', randomBytes(32)],
    ] as const) {
      const { store, resolved } = await stored(rdb, { compression, ...(key ? { key } : {}) });
      const bytes = Buffer.from(store.objects.get('k') ?? []);
      bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0x01;
      store.objects.set('k', bytes);
      await expect(
        verifySource(resolved, {}),
        `${compression} ${key ? 'encrypted' : ''}`,
      ).rejects.toMatchObject({
        reason: 'ChecksumMismatch',
        retry: false,
      });
    }
  });

  it('refuses what is not an RDB, a size other than recorded, and an object stored undecodable', async () => {
    const notRdb = await stored(randomBytes(5000), { compression: 'zstd' });
    await expect(verifySource(notRdb.resolved, {})).rejects.toMatchObject({
      reason: 'NotAnRdb',
      retry: false,
    });

    const { resolved } = await stored(rdb, { compression: 'zstd' });
    await expect(
      verifySource({ ...resolved, source: { ...resolved.source, rdbSize: rdb.length + 1 } }, {}),
    ).rejects.toMatchObject({ reason: 'SizeMismatch' });

    // Bytes that hash right but are no zstd frame: stored that way, not changed since.
    const garbage = randomBytes(3000);
    const store = memoryStore();
    store.objects.set('g', garbage);
    const bad: Resolved = {
      store: { store, prefix: '', compression: 'zstd' },
      source: {
        ...resolved.source,
        key: 'g',
        sha256: createHash('sha256').update(garbage).digest('hex'),
        size: garbage.length,
      },
    };
    await expect(verifySource(bad, {})).rejects.toMatchObject({ reason: 'CorruptObject', retry: false });
  });
});

describe('a target that dropped the transfer', () => {
  const dropped = new FeedError('TargetLost', 'the target dropped the transfer', true);

  it('is a changed object when the stored bytes no longer match: whichever showed first, the same end', async () => {
    // Unless the whole object went out: its checksum had matched then, nothing to hash.
    const whole = await stored(rdb, { compression: 'zstd' });
    whole.store.objects.set('k', Buffer.alloc(10));
    expect(await transferFailure(whole.resolved, dropped, { delivered: true })).toBe(dropped);
    const { store, resolved } = await stored(rdb, { compression: 'zstd' });
    const bytes = Buffer.from(store.objects.get('k') ?? []);
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0x01;
    store.objects.set('k', bytes);
    expect(await transferFailure(resolved, dropped, { delivered: false })).toMatchObject({
      reason: 'ChecksumMismatch',
      retry: false,
      message: expect.stringMatching(
        /the object changed after it was stored \(the target dropped the transfer\)$/,
      ),
    });
  });

  it('is a lost target when the object is the one stored, or the store does not answer; other errors stay', async () => {
    const { store, resolved } = await stored(rdb, { compression: 'zstd' });
    expect(await transferFailure(resolved, dropped, { delivered: false })).toBe(dropped);
    const other = new FeedError('TargetTooOld', 'old', false);
    expect(await transferFailure(resolved, other, { delivered: false })).toBe(other);
    store.download = async () => {
      throw new Error('connect ECONNREFUSED');
    };
    expect(await transferFailure(resolved, dropped, { delivered: false })).toBe(dropped);
    // A run told to stop (its lock lost) stops, rather than go on as a lost target.
    const stop = new AbortController();
    stop.abort();
    await expect(
      transferFailure(resolved, dropped, { delivered: false, signal: stop.signal }),
    ).rejects.toThrow('ECONNREFUSED');
  });
});
