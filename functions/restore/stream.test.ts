import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../shared/backup/object-store.ts';
import { hashStored, holdLast, isDecodeError } from './stream.ts';

const collect = async (it: AsyncIterable<Buffer>) => {
  const out: string[] = [];
  for await (const c of it) out.push(c.toString());
  return out;
};

describe('holdLast', () => {
  it('passes every chunk, the last only after beforeLast is done', async () => {
    const seen: string[] = [];
    const source = Readable.from([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')]);
    const out = holdLast(source, async () => {
      seen.push('beforeLast');
    });
    for await (const c of out) seen.push(c.toString());
    expect(seen).toEqual(['a', 'b', 'beforeLast', 'c']);
  });

  it('never passes the last chunk of a source that fails at its end (a checksum mismatch)', async () => {
    let called = false;
    const failing = Readable.from(
      (async function* () {
        yield Buffer.from('a');
        yield Buffer.from('b');
        throw new Error('ChecksumMismatch');
      })(),
    );
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of holdLast(failing, async () => {
          called = true;
        }))
          got.push(c.toString());
      })(),
    ).rejects.toThrow('ChecksumMismatch');
    expect(got).toEqual(['a']);
    expect(called).toBe(false);
  });

  it('does not pass the last chunk when beforeLast fails (the run lost its lock)', async () => {
    const source = Readable.from([Buffer.from('a'), Buffer.from('b')]);
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of holdLast(source, async () => {
          throw new Error('lock lost');
        }))
          got.push(c.toString());
      })(),
    ).rejects.toThrow('lock lost');
    expect(got).toEqual(['a']);
    expect(await collect(holdLast(Readable.from([]), async () => undefined))).toEqual([]);
  });

  it('never passes the chunk that completes the announced size while more follows', async () => {
    // 8 bytes announced: 'aaaa' + 'bbbb' would be a whole RDB to the target, loaded at once,
    // though the source goes on (and would fail its checksum only at its end).
    const longer = Readable.from([Buffer.from('aaaa'), Buffer.from('bbbb'), Buffer.from('cc')]);
    let called = false;
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const c of holdLast(
          longer,
          async () => {
            called = true;
          },
          8,
        ))
          got.push(c.toString());
      })(),
    ).rejects.toMatchObject({ name: 'IntegrityError', reason: 'SizeMismatch' });
    expect(got).toEqual(['aaaa']);
    expect(called).toBe(false);
    // Exactly the size announced: everything, the end after beforeLast.
    const seen: string[] = [];
    const exact = Readable.from([Buffer.from('aaaa'), Buffer.from('bbbb'), Buffer.from('cc')]);
    for await (const c of holdLast(exact, async () => void seen.push('beforeLast'), 10))
      seen.push(c.toString());
    expect(seen).toEqual(['aaaa', 'bbbb', 'beforeLast', 'cc']);
    // Short of it: the end is not sent, nor said to be going out.
    let told = false;
    const got2: string[] = [];
    await expect(
      (async () => {
        for await (const c of holdLast(
          Readable.from([Buffer.from('aaaa'), Buffer.from('bb')]),
          async () => {
            told = true;
          },
          10,
        ))
          got2.push(c.toString());
      })(),
    ).rejects.toMatchObject({ reason: 'SizeMismatch' });
    expect(got2).toEqual(['aaaa']);
    expect(told).toBe(false);
  });

  it('knows decompressor errors from others', () => {
    expect(isDecodeError(Object.assign(new Error('x'), { code: 'Z_DATA_ERROR' }))).toBe(true);
    expect(isDecodeError(Object.assign(new Error('x'), { code: 'ZSTD_error_prefix_unknown' }))).toBe(true);
    expect(isDecodeError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isDecodeError(new Error('x'))).toBe(false);
  });
});

describe('hashStored', () => {
  it('stops past the size it is told: a grown object is not downloaded whole', async () => {
    let sent = 0;
    const store = {
      download: async () =>
        Readable.from(
          (async function* () {
            for (; sent < 2000; sent++) yield Buffer.alloc(16384);
          })(),
        ),
    } as unknown as ObjectStore;
    const raw = await hashStored(store, 'k', undefined, 10 * 16384);
    expect(raw.size).toBeGreaterThan(10 * 16384);
    expect(sent).toBeLessThan(50);
  });
});
