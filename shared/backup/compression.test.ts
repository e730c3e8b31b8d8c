import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { own } from './buffers.ts';
import { COMPRESSIONS, compressor, decompressor } from './compression.ts';

const through = async (chunks: Buffer[], stages: (NodeJS.ReadWriteStream | undefined)[], slow = false) => {
  const out: Buffer[] = [];
  await (pipeline as (...args: unknown[]) => Promise<void>)(
    Readable.from(chunks),
    ...stages.filter((s) => s !== undefined),
    new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _e, done) {
        out.push(Buffer.from(chunk));
        if (slow) setTimeout(done, 1);
        else done();
      },
    }),
  );
  return Buffer.concat(out);
};

describe('compressor', () => {
  // Half incompressible, half repetitive: a wrong stage or a lost piece gives other bytes.
  const data = Buffer.concat([randomBytes(1.5 * 1024 * 1024), Buffer.alloc(1.5 * 1024 * 1024, 'redis ')]);
  const pieces = (b: Buffer, n: number) =>
    Array.from({ length: Math.ceil(b.length / n) }, (_, i) => b.subarray(i * n, (i + 1) * n));

  for (const c of COMPRESSIONS)
    it(`${c}: what it writes decompresses to the input, also behind a slow consumer`, async () => {
      const packed = await through(pieces(data, 100_000), [compressor(c)], true);
      if (c !== 'none') expect(packed.length).toBeLessThan(data.length * 0.6);
      expect((await through([packed], [decompressor(c)])).equals(data)).toBe(true);
    });

  it('hands on what it decompresses in pieces of 256 KiB, not zlib’s 16 KiB (each a trip to its thread pool)', async () => {
    for (const c of ['zstd', 'gzip'] as const) {
      const packed = await through([data], [compressor(c)]);
      const sizes: number[] = [];
      await (pipeline as (...args: unknown[]) => Promise<void>)(
        Readable.from([packed]),
        decompressor(c),
        new Writable({
          write(chunk: Buffer, _e, done) {
            sizes.push(chunk.length);
            done();
          },
        }),
      );
      expect(sizes.reduce((a, n) => a + n, 0)).toBe(data.length);
      expect(Math.max(...sizes), c).toBe(256 * 1024);
      expect(sizes.length, c).toBeLessThanOrEqual(Math.ceil(data.length / (256 * 1024)) + 1);
    }
  });

  it('frees each input block of the data path’s own once zlib consumed it, and leaves a caller’s alone', async () => {
    const owned = pieces(Buffer.from(data), 256 * 1024).map((p) => own(Buffer.from(p)));
    const callers = pieces(Buffer.from(data), 256 * 1024).map((p) => Buffer.from(p));
    const a = await through(owned, [compressor('zstd')]);
    const b = await through(callers, [compressor('zstd')]);
    expect(owned.every((p) => p.length === 0)).toBe(true);
    expect(Buffer.concat(callers).equals(data)).toBe(true);
    expect((await through([a], [decompressor('zstd')])).equals(data)).toBe(true);
    expect((await through([b], [decompressor('zstd')])).equals(data)).toBe(true);
  });

  it('fails the stream when its input breaks, and on corrupt input to the way back', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('source lost'));
      },
    });
    await expect(
      pipeline(
        failing,
        compressor('zstd') as NodeJS.ReadWriteStream,
        new Writable({ write: (_c, _e, d) => d() }),
      ),
    ).rejects.toThrow('source lost');
    await expect(through([randomBytes(4096)], [decompressor('zstd')])).rejects.toThrow();
  });
});
