import { describe, expect, it } from 'vitest';
import { partSizes, S3_LIMITS } from './part-size.ts';

const MiB = 1024 * 1024;
const total = (sizes: (i: number) => number, parts: number) => {
  let sum = 0;
  for (let i = 0; i < parts; i++) sum += sizes(i);
  return sum;
};

describe('partSizes', () => {
  it('uses 5 MiB parts, S3’s minimum, for ordinary sizes and unknown ones', () => {
    expect(partSizes(undefined)(0)).toBe(5 * MiB);
    expect(partSizes(1024 * MiB)(0)).toBe(5 * MiB);
    expect(partSizes(1024 * MiB)(204)).toBe(5 * MiB);
  });

  it('grows the first part so the expected size fits in 1,000 parts', () => {
    const sizes = partSizes(100 * 1024 * MiB);
    expect(sizes(0)).toBe(103 * MiB);
    expect(total(sizes, 1000)).toBeGreaterThanOrEqual(100 * 1024 * MiB);
  });

  it('doubles every 1,000 parts, so a size far beyond the estimate still fits in 10,000 parts', () => {
    const sizes = partSizes(undefined);
    expect(sizes(999)).toBe(5 * MiB);
    expect(sizes(1000)).toBe(10 * MiB);
    expect(sizes(2000)).toBe(20 * MiB);
    expect(total(sizes, S3_LIMITS.maxParts)).toBeGreaterThan(4.8 * 1024 * 1024 * MiB);
    expect(sizes(9999)).toBeLessThanOrEqual(S3_LIMITS.maxPart);
  });

  it('never goes below S3’s minimum part size', () => {
    expect(partSizes(1, 1)(0)).toBe(S3_LIMITS.minPart);
  });
});
