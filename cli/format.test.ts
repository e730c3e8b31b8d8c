import { describe, expect, it } from 'vitest';
import { bar, etaSeconds, formatBytes, formatDuration, progressLine } from './format.ts';

describe('format', () => {
  it('bytes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(32 * 1024 * 1024)).toBe('32.0 MiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });

  it('durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(44.6)).toBe('45s');
    expect(formatDuration(185)).toBe('3m05s');
    expect(formatDuration(3720)).toBe('1h02m');
    expect(formatDuration(-3)).toBe('0s');
  });

  it('a bar fills with the percentage and clamps out-of-range values', () => {
    expect(bar(0, 10)).toBe('[----------]   0%');
    expect(bar(50, 10)).toBe('[#####-----]  50%');
    expect(bar(100, 10)).toBe('[##########] 100%');
    expect(bar(140, 10)).toBe('[##########] 100%');
    expect(bar(-5, 10)).toBe('[----------]   0%');
  });

  it('ETA from the recent rate, not the average since the start', () => {
    expect(etaSeconds([])).toBeUndefined();
    expect(etaSeconds([{ atMs: 0, percent: 10 }])).toBeUndefined();
    // No movement: no rate, no guess.
    expect(
      etaSeconds([
        { atMs: 0, percent: 10 },
        { atMs: 5000, percent: 10 },
      ]),
    ).toBeUndefined();
    // 10 % per second → 50 % left takes 5 s.
    expect(
      etaSeconds([
        { atMs: 0, percent: 40 },
        { atMs: 1000, percent: 50 },
      ]),
    ).toBe(5);
    // Slow at first (1 %/s for 30 s), fast lately (10 %/s): the window sees only the recent rate.
    const samples = [
      { atMs: 0, percent: 0 },
      { atMs: 30_000, percent: 30 },
      { atMs: 31_000, percent: 40 },
      { atMs: 32_000, percent: 50 },
    ];
    expect(etaSeconds(samples, 5000)).toBe(5);
    // Whole history: (100-50) / (50/32 s) = 32 s.
    expect(etaSeconds(samples, 60_000)).toBe(32);
    expect(etaSeconds([{ atMs: 0, percent: 100 }])).toBe(0);
  });

  it('a progress line shows only what is known', () => {
    expect(progressLine({ phase: 'Pending' })).toBe('Pending     ');
    expect(progressLine({ phase: 'Running', percent: 50, bytes: 2048, eta: 65 })).toBe(
      `Running       [############------------]  50%  2.0 KiB  ETA 1m05s`,
    );
  });
});
