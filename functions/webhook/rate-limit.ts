import { isIPv6 } from 'node:net';

export type RateLimit = {
  /** Requests per second refilled. */
  readonly rate: number;
  /** Requests allowed at once. */
  readonly burst: number;
};

export type RateLimiter = {
  /** Takes one token for `key`: undefined when allowed, else seconds until one is free. */
  take(key: string, nowMs: number): number | undefined;
  readonly size: () => number;
};

/**
 * Per namespace and webhook-id: a sender retries one request a few times, far apart; more than
 * that is a replay, which must not spend the namespace's budget (auth.ts).
 */
export const PER_ID: RateLimit = { rate: 0.2, burst: 3 };

/**
 * Token buckets per key, in a map bounded by `maxKeys`: the least recently used key is dropped
 * when a new one arrives, so a flood of distinct keys costs bounded memory (a dropped key starts
 * with a full bucket again, which costs the flood more than it gains).
 */
export const tokenBuckets = (limit: RateLimit, maxKeys = 10_000): RateLimiter => {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take: (key, now) => {
      const b = buckets.get(key) ?? { tokens: limit.burst, at: now };
      buckets.delete(key);
      b.tokens = Math.min(limit.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * limit.rate);
      b.at = now;
      let wait: number | undefined;
      if (b.tokens >= 1) b.tokens -= 1;
      else wait = Math.max(1, Math.ceil((1 - b.tokens) / limit.rate));
      buckets.set(key, b);
      if (buckets.size > maxKeys) {
        const oldest = buckets.keys().next().value;
        if (oldest !== undefined) buckets.delete(oldest);
      }
      return wait;
    },
    size: () => buckets.size,
  };
};

/**
 * Whom a source limit applies to: an IPv4 address, or an IPv6 /64 (one host usually has a whole
 * /64 to pick addresses from). IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
export const sourceKey = (address: string | undefined): string => {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
};
