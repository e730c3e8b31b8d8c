export type InfoSections = Record<string, Record<string, string>>;

/** INFO output → sections of key/value strings. */
export const parseInfo = (text: string): InfoSections => {
  const sections: Record<string, Record<string, string>> = {};
  let current: Record<string, string> = {};
  sections.default = current;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('#')) {
      current = {};
      sections[line.slice(1).trim().toLowerCase()] = current;
      continue;
    }
    const i = line.indexOf(':');
    if (i > 0) current[line.slice(0, i)] = line.slice(i + 1);
  }
  return sections;
};

export type ReplicaLink = { ip: string; port: number; state: string; offset: number; lag: number };

export type Replication =
  | {
      role: 'master';
      offset: number;
      replicas: ReplicaLink[];
      replid: string;
      /** The history it continued after a promotion (master_replid2). */
      replid2?: string;
    }
  | {
      role: 'replica';
      offset: number;
      masterHost: string;
      masterPort: number;
      /** up once the initial sync finished and the link is alive. */
      linkUp: boolean;
      syncInProgress: boolean;
      replid: string;
      /** The history it continued from after a promotion or a partial resync (master_replid2). */
      replid2: string;
      /**
       * Seconds since the link to its master went down; Infinity when it never came up since the
       * server started (Redis 7 reports -1; older servers the seconds since the epoch).
       */
      linkDownSeconds: number;
    };

const num = (v: string | undefined) => (v === undefined ? 0 : Number(v));
const NO_HISTORY = '0000000000000000000000000000000000000000';

const linkDownSeconds = (r: Record<string, string>) => {
  if (r.master_link_status === 'up') return 0;
  const v = r.master_link_down_since_seconds;
  const n = v === undefined ? Number.NaN : Number(v);
  // -1: never connected since start; a value above ten years is an older server's epoch seconds.
  return Number.isFinite(n) && n >= 0 && n < 315_360_000 ? n : Number.POSITIVE_INFINITY;
};

/** A history id that names real data (not the zero id of a server that never had a master). */
export const isHistory = (id: string | undefined) => !!id && id !== NO_HISTORY;

/** The replication section of INFO, in the shape failover decisions need. */
export const parseReplication = (info: string | InfoSections): Replication => {
  const r = (typeof info === 'string' ? parseInfo(info) : info).replication ?? {};
  if (r.role === 'master') {
    const replicas: ReplicaLink[] = [];
    for (const [k, v] of Object.entries(r)) {
      if (!/^slave\d+$/.test(k)) continue;
      const f = Object.fromEntries(v.split(',').map((kv) => kv.split('=') as [string, string]));
      replicas.push({
        ip: f.ip ?? '',
        port: num(f.port),
        state: f.state ?? '',
        offset: num(f.offset),
        lag: num(f.lag),
      });
    }
    return {
      role: 'master',
      offset: num(r.master_repl_offset),
      replicas,
      replid: r.master_replid ?? '',
      ...(isHistory(r.master_replid2) ? { replid2: r.master_replid2 } : {}),
    };
  }
  return {
    role: 'replica',
    offset: num(r.slave_repl_offset ?? r.master_repl_offset),
    masterHost: r.master_host ?? '',
    masterPort: num(r.master_port),
    linkUp: r.master_link_status === 'up',
    syncInProgress: r.master_sync_in_progress === '1',
    replid: r.master_replid ?? '',
    replid2: r.master_replid2 ?? '',
    linkDownSeconds: linkDownSeconds(r),
  };
};

/** redis_version (Redis) or valkey_version (Valkey) from INFO server. */
export const serverVersion = (
  info: string | InfoSections,
): { product: 'redis' | 'valkey'; version: string } => {
  const s = (typeof info === 'string' ? parseInfo(info) : info).server ?? {};
  if (s.valkey_version) return { product: 'valkey', version: s.valkey_version };
  return { product: 'redis', version: s.redis_version ?? 'unknown' };
};

/**
 * From INFO memory: the maxmemory (bytes; 0: none) and policy, and what Redis counts against it —
 * used_memory less the replication and AOF buffers it leaves out (mem_not_counted_for_evict, Redis
 * 6.0 and later; before, nothing is left out).
 */
export const maxmemoryCount = (m: Record<string, string> | undefined) => ({
  maxmemory: { bytes: Number(m?.maxmemory ?? 0), policy: m?.maxmemory_policy ?? '' },
  counted: Math.max(0, Number(m?.used_memory ?? 0) - Number(m?.mem_not_counted_for_evict ?? 0)),
});
