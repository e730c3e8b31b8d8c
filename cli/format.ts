const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** 1536 → "1.5 KiB"; whole bytes below 1 KiB. */
export const formatBytes = (n: number): string => {
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${UNITS[i]}`;
};

/** Seconds → "45s", "3m05s", "1h02m". */
export const formatDuration = (seconds: number): string => {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
};

/** A sample of progress: when (ms) and how far (percent). */
export type Sample = { atMs: number; percent: number };

/**
 * Seconds left, from the rate over the samples of the last `windowMs` (a recent rate follows a
 * backup that speeds up or slows down); undefined until there is a rate to go by.
 */
export const etaSeconds = (samples: readonly Sample[], windowMs = 10_000): number | undefined => {
  const last = samples.at(-1);
  if (!last || last.percent >= 100) return last ? 0 : undefined;
  const first = samples.find((s) => s.atMs >= last.atMs - windowMs) ?? last;
  const dp = last.percent - first.percent;
  const dt = last.atMs - first.atMs;
  if (dp <= 0 || dt <= 0) return undefined;
  return ((100 - last.percent) * dt) / dp / 1000;
};

/** "[#########-----------]  45%" with `width` cells. */
export const bar = (percent: number, width = 24): string => {
  const p = Math.min(100, Math.max(0, percent));
  const full = Math.round((p / 100) * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${String(Math.floor(p)).padStart(3)}%`;
};

/** One progress line: phase, bar, bytes, ETA (each part only when known). */
export const progressLine = (p: {
  phase: string;
  percent?: number | undefined;
  bytes?: number | undefined;
  eta?: number | undefined;
}): string =>
  [
    p.phase.padEnd(12),
    p.percent === undefined ? undefined : bar(p.percent),
    p.bytes === undefined ? undefined : formatBytes(p.bytes),
    p.eta === undefined ? undefined : `ETA ${formatDuration(p.eta)}`,
  ]
    .filter((x) => x !== undefined)
    .join('  ');
