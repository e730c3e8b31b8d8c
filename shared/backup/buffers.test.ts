import { describe, expect, it } from 'vitest';
import { own, release } from './buffers.ts';

describe('release', () => {
  it('frees the data path’s own memory at its last part, and nothing before', () => {
    const b = own(Buffer.alloc(1024, 1));
    const first = b.subarray(0, 512);
    const last = b.subarray(512);
    release(first);
    expect(b.length).toBe(1024);
    expect(first[0]).toBe(1);
    release(last);
    expect(b.buffer.byteLength).toBe(0);
    expect(b.length).toBe(0);
  });

  it('never touches a caller’s buffer, even at its end', () => {
    const mine = Buffer.alloc(1024, 7);
    release(mine);
    release(mine.subarray(1000));
    expect(mine.length).toBe(1024);
    expect(mine.every((v) => v === 7)).toBe(true);
  });

  it('frees once: a second release of the same memory is nothing', () => {
    const b = own(Buffer.alloc(64));
    release(b);
    expect(() => release(b)).not.toThrow();
    expect(b.length).toBe(0);
  });
});
