import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it('reads single and compound durations', () => {
    expect(parseDuration('5s')).toBe(5000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('26h')).toBe(93_600_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('1.5s')).toBe(1500);
  });

  it('refuses what the schema would refuse', () => {
    for (const bad of ['', '5', 's', '5 s', '5sx', '-1s', '1y'])
      expect(() => parseDuration(bad)).toThrow(RangeError);
  });
});
