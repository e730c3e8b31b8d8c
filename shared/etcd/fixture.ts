import { createHash } from 'node:crypto';

/**
 * For tests: the gateway's answer to /v3/maintenance/snapshot for `db`, as etcd frames it
 * (32 KiB blobs with remaining_bytes, zero values left out, then the SHA-256 message).
 */
export const gatewaySnapshot = (db: Buffer, o: { blob?: number; version?: string; digest?: Buffer } = {}) => {
  const blob = o.blob ?? 32 * 1024;
  const version = o.version ? { version: o.version } : {};
  const lines: string[] = [];
  for (let sent = 0; sent < db.length; ) {
    const part = db.subarray(sent, sent + blob);
    sent += part.length;
    const remaining = db.length - sent;
    lines.push(
      JSON.stringify({
        result: {
          ...(remaining ? { remaining_bytes: String(remaining) } : {}),
          blob: part.toString('base64'),
          ...version,
        },
      }),
    );
  }
  const digest = o.digest ?? createHash('sha256').update(db).digest();
  lines.push(JSON.stringify({ result: { blob: digest.toString('base64'), ...version } }));
  return lines.map((l) => `${l}\n`);
};

/** Splits bytes into pieces at random places (seeded: a failure replays). */
export const randomChunks = (data: Buffer, seed: number, max = 97): Buffer[] => {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; ) {
    const n = 1 + Math.floor(next() * max);
    out.push(data.subarray(i, i + n));
    i += n;
  }
  return out;
};
