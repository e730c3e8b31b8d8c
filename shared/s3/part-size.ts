const MiB = 1024 * 1024;

/** S3's limits: parts of 5 MiB to 5 GiB (the last may be smaller), at most 10,000 of them. */
export const S3_LIMITS = { minPart: 5 * MiB, maxPart: 5 * 1024 * MiB, maxParts: 10_000 } as const;

/** Parts in a row of the same size before the size doubles. */
const STEP = 1000;

/**
 * The part size for each part of an upload whose size is `expected` bytes (an estimate, or
 * undefined when unknown): S3's minimum, 5 MiB, or larger so the estimate fits in 1,000 parts;
 * then doubling every 1,000 parts, so an upload larger than expected still fits in S3's 10,000
 * parts (5 MiB parts reach 4.8 TiB, beyond any one Redis or etcd member). Memory holds a few parts, so the common
 * case gets the smallest (docs/backup.md: 8 MiB parts cost ~7 MiB more RSS at the same speed).
 */
export const partSizes = (
  expected: number | undefined,
  minimum = S3_LIMITS.minPart,
): ((index: number) => number) => {
  const first = Math.max(minimum, S3_LIMITS.minPart, Math.ceil((expected ?? 0) / STEP / MiB) * MiB);
  return (index) => Math.min(S3_LIMITS.maxPart, first * 2 ** Math.floor(index / STEP));
};
