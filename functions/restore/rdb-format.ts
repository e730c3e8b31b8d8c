/** The 9 bytes an RDB file starts with: `REDIS0011`, or Valkey 9's `VALKEY080`. */
export type RdbFormat = { magic: 'REDIS' | 'VALKEY'; version: number };

export const RDB_HEADER_BYTES = 9;

/** The format an RDB declares in its first 9 bytes; undefined when they are no RDB header. */
export const rdbFormatOf = (head: Buffer): RdbFormat | undefined => {
  const text = head.subarray(0, RDB_HEADER_BYTES).toString('latin1');
  const m = /^(?:REDIS(\d{4})|VALKEY(\d{3}))$/.exec(text);
  if (!m) return undefined;
  return m[1] !== undefined
    ? { magic: 'REDIS', version: Number(m[1]) }
    : { magic: 'VALKEY', version: Number(m[2]) };
};

/** `7.2.4` → [7, 2]; undefined when it is no version. */
const majorMinor = (version: string): [number, number] | undefined => {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
};

const atLeast = (v: [number, number], major: number, minor: number) =>
  v[0] > major || (v[0] === major && v[1] >= minor);

/**
 * The newest RDB version a Redis release writes and loads (rdb.h, RDB_VERSION), newest first.
 * A release newer than the table loads at least what the newest entry does.
 */
const REDIS_RDB: readonly [major: number, minor: number, rdb: number][] = [
  [7, 4, 12],
  [7, 2, 11],
  [7, 0, 10],
  [5, 0, 9],
  [4, 0, 8],
  [3, 2, 7],
  [2, 6, 6],
];

/**
 * Whether a server loads an RDB of that format, or why not. A server handed a format it cannot
 * load finds out only after it emptied its data set (a replica flushes before it parses), so this
 * is decided before anything is sent. Valkey 7.2–8.x load Redis formats up to 11; Valkey 9 writes
 * `VALKEY080` and loads that and up to 11 — 12 to 79 are Redis 7.4+'s, which Valkey refuses
 * by default (`rdb-version-check strict`). Redis loads up to the version of its release.
 */
export const loadProblem = (
  rdb: RdbFormat,
  server: { product: 'redis' | 'valkey'; version: string },
): string | undefined => {
  const v = majorMinor(server.version);
  const name = `${server.product === 'valkey' ? 'Valkey' : 'Redis'} ${server.version}`;
  const format =
    rdb.magic === 'VALKEY' ? `VALKEY${String(rdb.version).padStart(3, '0')}` : `RDB version ${rdb.version}`;
  if (!v) return `the target runs ${name}, whose RDB support Tideway cannot tell`;
  if (server.product === 'valkey') {
    const nine = atLeast(v, 9, 0);
    if (rdb.version <= 11 || (nine && rdb.magic === 'VALKEY' && rdb.version === 80)) return undefined;
    return `${format} cannot be loaded by ${name}, which loads RDB versions up to 11${nine ? ' and VALKEY080' : ''} (RDB 12 and later are Redis 7.4+ formats): restore it into a cluster that runs a version that wrote it, or newer`;
  }
  if (rdb.magic === 'VALKEY')
    return `${format} was written by Valkey 9 or later and cannot be loaded by ${name}: restore it into a Valkey 9 cluster`;
  const max = REDIS_RDB.find(([major, minor]) => atLeast(v, major, minor))?.[2];
  if (max === undefined) return `${name} is older than any release Tideway knows the RDB format of`;
  if (rdb.version <= max) return undefined;
  return `RDB version ${rdb.version} cannot be loaded by ${name}, which loads RDB versions up to ${max}: restore it into a cluster that runs the version that wrote it, or newer`;
};
