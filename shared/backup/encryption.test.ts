import { randomBytes } from 'node:crypto';
import { Readable, type Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { own } from './buffers.ts';
import { decryptor, encryptor } from './encryption.ts';
import { ConfigurationError, IntegrityError } from './errors.ts';

const key = randomBytes(32);
const HEADER = 28;
const TAG = 16;

/** Runs `input` (cut into `piece`-byte writes) through `t`; the output joined, or the error. */
const run = async (t: Transform, input: Buffer, piece = 1000) => {
  const out: Buffer[] = [];
  const pieces = function* () {
    for (let i = 0; i < input.length; i += piece) yield input.subarray(i, i + piece);
  };
  await pipeline(
    Readable.from(pieces()),
    t,
    new Writable({
      write(c: Buffer, _e, done) {
        out.push(c);
        done();
      },
    }),
  );
  return Buffer.concat(out);
};
const encrypt = (plain: Buffer, chunk: number, piece?: number) => run(encryptor(key, chunk), plain, piece);
const decrypt = (sealed: Buffer, k = key, piece?: number) => run(decryptor(k), sealed, piece);

describe('chunked AES-256-GCM', () => {
  it('round-trips any length, cut anywhere: empty, below, at and above chunk multiples', async () => {
    const chunk = 64;
    for (const n of [0, 1, 63, 64, 65, 128, 129, 1000]) {
      const plain = randomBytes(n);
      for (const piece of [1, 7, 64, 5000]) {
        const sealed = await encrypt(plain, chunk, piece);
        // Header, then one tag per chunk (a last, possibly empty, chunk always).
        expect(sealed.length).toBe(HEADER + n + TAG * Math.max(1, Math.ceil(n / chunk)));
        expect((await decrypt(sealed, key, piece)).equals(plain)).toBe(true);
      }
    }
  });

  it('hides the plaintext and never seals two files alike', async () => {
    const plain = Buffer.alloc(300, 0x41);
    const a = await encrypt(plain, 100);
    const b = await encrypt(plain, 100);
    expect(a.includes(Buffer.alloc(32, 0x41))).toBe(false);
    expect(a.subarray(HEADER).equals(b.subarray(HEADER))).toBe(false);
  });

  const sealed = async () => encrypt(randomBytes(250), 100); // chunks of 100, 100, 50
  const unit = 100 + TAG;
  const fails = async (bytes: Buffer, k = key) => {
    const error = await decrypt(bytes, k).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    return error as IntegrityError;
  };

  it('detects a wrong key', async () => {
    expect((await fails(await sealed(), randomBytes(32))).reason).toBe('DecryptionFailed');
  });

  it('detects truncation at every chunk boundary and inside chunks', async () => {
    const s = await sealed();
    for (const cut of [HEADER + unit, HEADER + 2 * unit, HEADER + 5, s.length - 1, HEADER, 10])
      await fails(s.subarray(0, cut));
  });

  it('detects reordered, duplicated, appended and changed chunks, and a changed header', async () => {
    const s = await sealed();
    const [h, c0, c1, c2] = [
      s.subarray(0, HEADER),
      s.subarray(HEADER, HEADER + unit),
      s.subarray(HEADER + unit, HEADER + 2 * unit),
      s.subarray(HEADER + 2 * unit),
    ];
    await fails(Buffer.concat([h, c1, c0, c2]));
    await fails(Buffer.concat([h, c0, c0, c2]));
    await fails(Buffer.concat([h, c0, c1, c2, c2]));
    for (const at of [HEADER, HEADER + 150, s.length - 1, 9, 20]) {
      const changed = Buffer.from(s);
      changed[at] = (changed[at] ?? 0) ^ 1;
      await fails(changed);
    }
    // A chunk of another file under the same key.
    const other = await sealed();
    await fails(Buffer.concat([h, c0, other.subarray(HEADER + unit, HEADER + 2 * unit), c2]));
  });

  it('refuses what is not its format, and keys that are not 32 bytes', async () => {
    expect((await fails(Buffer.from('REDIS0011 plain rdb bytes, not encrypted at all'))).reason).toBe(
      'NotEncrypted',
    );
    for (const n of [0, 16, 31, 33, 44, 64])
      expect(() => encryptor(randomBytes(n))).toThrow(ConfigurationError);
    expect(() => decryptor(randomBytes(44))).toThrow(/holds 44 bytes; an AES-256 key is exactly 32 bytes/);
  });

  it('keeps memory bounded: output flows while input is much larger than a chunk', async () => {
    const t = encryptor(key, 1024);
    let most = 0;
    let seen = 0;
    const input = function* () {
      for (let i = 0; i < 2000; i++) yield randomBytes(1000);
    };
    await pipeline(
      Readable.from(input()),
      t,
      new Writable({
        write(c: Buffer, _e, done) {
          seen += c.length;
          most = Math.max(most, t.readableLength + t.writableLength);
          done();
        },
      }),
    );
    expect(seen).toBeGreaterThan(2_000_000);
    expect(most).toBeLessThan(64 * 1024);
  });

  it('frees input blocks of the data path’s own once copied, and leaves a caller’s alone', async () => {
    const plain = randomBytes(300_000);
    const blocks = [0, 1, 2].map((i) => own(Buffer.from(plain.subarray(i * 100_000, (i + 1) * 100_000))));
    const callers = [0, 1, 2].map((i) => Buffer.from(plain.subarray(i * 100_000, (i + 1) * 100_000)));
    const out: Buffer[][] = [[], []];
    for (const [n, input] of [blocks, callers].entries())
      await pipeline(
        Readable.from(input),
        encryptor(key, 65536),
        new Writable({
          write(c: Buffer, _e, done) {
            out[n]?.push(Buffer.from(c));
            done();
          },
        }),
      );
    expect(blocks.every((b) => b.length === 0)).toBe(true);
    expect(Buffer.concat(callers).equals(plain)).toBe(true);
    for (const sealed of out) expect((await decrypt(Buffer.concat(sealed))).equals(plain)).toBe(true);
  });
});
