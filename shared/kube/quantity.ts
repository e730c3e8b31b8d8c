const SUFFIX: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * A Kubernetes resource quantity (`1Gi`, `500M`, `1.5Gi`, `129e6`, `100m`) as a number of units
 * (bytes, for memory and storage); undefined for anything the API server would not take.
 */
export const bytesOf = (q: string): number | undefined => {
  const m =
    /^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?$/.exec(
      q.trim(),
    );
  if (!m) return undefined;
  const n = Number(m[1]) * (m[2] === undefined ? (SUFFIX[m[3] ?? ''] ?? 1) : 10 ** Number(m[2]));
  return Number.isFinite(n) ? n : undefined;
};
