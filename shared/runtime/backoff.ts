/**
 * Exponential back-off with full jitter in [d/2, d]: retries of many objects that failed together
 * do not come back together.
 */
export const backoffMs = (
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
) => {
  const d = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(d / 2 + (random() * d) / 2);
};
