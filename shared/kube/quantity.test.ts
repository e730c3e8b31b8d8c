import { describe, expect, it } from 'vitest';
import { bytesOf } from './quantity.ts';

describe('bytesOf', () => {
  it('reads binary and decimal suffixes, exponents and plain numbers', () => {
    expect(bytesOf('1Gi')).toBe(2 ** 30);
    expect(bytesOf('1.5G')).toBe(1.5e9);
    expect(bytesOf('512Mi')).toBe(512 * 2 ** 20);
    expect(bytesOf('100')).toBe(100);
    expect(bytesOf('129e6')).toBe(129e6);
    expect(bytesOf('1E3')).toBe(1000);
    expect(bytesOf('500m')).toBe(0.5);
    expect(bytesOf('.5Ki')).toBe(512);
  });

  it('refuses what is not a quantity', () => {
    for (const q of ['1gb', '', 'Gi', '-1Gi', '1 Gi x', '1e', 'NaN']) expect(bytesOf(q), q).toBeUndefined();
  });
});
