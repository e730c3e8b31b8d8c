import { describe, expect, it } from 'vitest';
import { isMemberId, memberIdFromHex, memberIdToHex } from './ids.ts';

describe('member ids', () => {
  it('keeps uint64 exact, past 2^53', () => {
    expect(memberIdToHex('13668033151171901709')).toBe('bdae9bbc11dd390d');
    expect(memberIdFromHex('bdae9bbc11dd390d')).toBe('13668033151171901709');
    expect(memberIdFromHex('0xFFFFFFFFFFFFFFFF')).toBe('18446744073709551615');
  });

  it('refuses what is not one', () => {
    expect(isMemberId('18446744073709551616')).toBe(false);
    expect(isMemberId('-1')).toBe(false);
    expect(isMemberId('1e3')).toBe(false);
    expect(isMemberId('')).toBe(false);
    expect(() => memberIdToHex('x')).toThrow(RangeError);
    expect(() => memberIdFromHex('10000000000000000')).toThrow(RangeError);
  });
});
