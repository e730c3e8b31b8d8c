const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** Longest first, so `ms` is read before `m` and `s`. */
const UNITS = Object.keys(UNIT_MS).sort((a, b) => b.length - a.length) as (keyof typeof UNIT_MS)[];
const NUMBER = '[0-9]+(?:\\.[0-9]+)?';
const PART = new RegExp(`(${NUMBER})(${UNITS.join('|')})`, 'gy');

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

/**
 * A CEL expression (Kubernetes CRD rules) for the milliseconds of the duration string `expr`, as
 * a double: the same units and parts as parseDuration (CEL's own duration() knows no `d`). For a
 * string the schema's pattern already admitted.
 */
export const celDurationMs = (expr: string): string => {
  const factor = UNITS.reduceRight(
    (rest, u, i) =>
      i === UNITS.length - 1 ? `${UNIT_MS[u]}.0` : `(t.endsWith('${u}') ? ${UNIT_MS[u]}.0 : ${rest})`,
    '',
  );
  return `${expr}.findAll(r'${PART.source}').map(t, double(t.find(r'^${NUMBER}')) * ${factor}).sum()`;
};
