import { describe, expect, it } from 'vitest';
import { prefixEnd } from './keys.ts';

describe('prefixEnd', () => {
  it('increments the last byte below 0xff and drops what follows', () => {
    expect(prefixEnd(Buffer.from('abc'))).toEqual(Buffer.from('abd'));
    expect(prefixEnd(Buffer.from([0x61, 0xff, 0xff]))).toEqual(Buffer.from([0x62]));
    expect(prefixEnd(Buffer.from([0x01, 0xfe]))).toEqual(Buffer.from([0x01, 0xff]));
  });

  it('is "\\0" (to the end of the keyspace) when nothing can be incremented', () => {
    expect(prefixEnd(Buffer.from([0xff, 0xff]))).toEqual(Buffer.from([0]));
    expect(prefixEnd(Buffer.alloc(0))).toEqual(Buffer.from([0]));
  });

  it('does not change its input', () => {
    const p = Buffer.from('abc');
    prefixEnd(p);
    expect(p.toString()).toBe('abc');
  });
});
