import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { tarOf } from './fixtures.ts';
import { readTar, TarFormatError } from './tar.ts';

/** The bytes in chunks of `size`, so members and headers straddle chunk boundaries. */
const chunked = (b: Buffer, size: number) =>
  Readable.from(
    Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size)),
  );

const collect = async (source: AsyncIterable<Buffer>, readData = true) => {
  const out: { path: string; type: string; data: string; linkpath: string; mode: number; uid: number }[] = [];
  for await (const { entry, data } of readTar(source)) {
    let text = '';
    if (readData) for await (const c of data) text += c.toString();
    out.push({
      path: entry.path,
      type: entry.type,
      data: text,
      linkpath: entry.linkpath,
      mode: entry.mode,
      uid: entry.uid,
    });
  }
  return out;
};

describe('readTar', () => {
  const long = `${'d'.repeat(80)}/${'f'.repeat(80)}`;
  const tar = tarOf([
    { path: 'etc/', type: 'dir', mode: 0o755 },
    { path: 'etc/passwd', data: 'root:x:0:0::/root:/bin/sh\n', mode: 0o644 },
    { path: 'bin', type: 'symlink', linkpath: 'usr/bin' },
    { path: long, data: 'x'.repeat(5000), uid: 65532, mode: 0o4755 },
    { path: 'etc/link', type: 'hardlink', linkpath: 'etc/passwd' },
  ]);

  it('reads members, their content, pax long names, modes and owners, whatever the chunking', async () => {
    for (const size of [1, 7, 512, 513, 100_000]) {
      const got = await collect(chunked(tar, size));
      expect(
        got.map((e) => [e.path, e.type]),
        `chunks of ${size}`,
      ).toEqual([
        ['etc/', 'dir'],
        ['etc/passwd', 'file'],
        ['bin', 'symlink'],
        [long, 'file'],
        ['etc/link', 'hardlink'],
      ]);
      expect(got[1]?.data).toBe('root:x:0:0::/root:/bin/sh\n');
      expect(got[2]?.linkpath).toBe('usr/bin');
      expect(got[3]).toMatchObject({ data: 'x'.repeat(5000), uid: 65532, mode: 0o4755 });
      expect(got[4]?.linkpath).toBe('etc/passwd');
    }
  });

  it('skips what a reader leaves unread', async () => {
    const got = await collect(chunked(tar, 300), false);
    expect(got.map((e) => e.path)).toEqual(['etc/', 'etc/passwd', 'bin', long, 'etc/link']);
  });

  it('refuses a damaged header and a stream cut inside a member', async () => {
    const damaged = Buffer.from(tar);
    damaged[600] = (damaged[600] ?? 0) ^ 0xff; // inside the second header's name
    await expect(collect(chunked(damaged, 512))).rejects.toThrow(TarFormatError);
    await expect(collect(chunked(tar.subarray(0, 1200), 512))).rejects.toThrow(/ends inside a member/);
  });
});
