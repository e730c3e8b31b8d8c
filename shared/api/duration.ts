const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PART = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)/gy;

/**
 * A CRD duration (`90s`, `1h30m`, `26h`, `7d`, `1.5s`: the pattern the schemas enforce) in
 * milliseconds. The API server already refused anything else; this still throws on it rather
 * than guess.
 */
export const parseDuration = (text: string): number => {
  PART.lastIndex = 0;
  let ms = 0;
  let end = 0;
  for (let m = PART.exec(text); m; m = PART.exec(text)) {
    ms += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    end = PART.lastIndex;
  }
  if (end === 0 || end !== text.length)
    throw new RangeError(`"${text}" is not a duration like 90s, 5m, 1h30m, 26h or 7d`);
  return Math.round(ms);
};
