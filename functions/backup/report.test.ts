import { describe, expect, it } from 'vitest';
import { formatDuration, percentOf } from './report.ts';

describe('backup status helpers', () => {
  it('says percent only of a known total, and never 100 before the end', () => {
    expect(percentOf(50, 200)).toBe(25);
    expect(percentOf(200, 200)).toBe(99);
    expect(percentOf(10, undefined)).toBeUndefined();
    expect(percentOf(10, 0)).toBeUndefined();
  });

  it('formats durations in seconds', () => {
    expect(formatDuration(12_345)).toBe('12.3s');
    expect(formatDuration(40)).toBe('0.0s');
  });
});
