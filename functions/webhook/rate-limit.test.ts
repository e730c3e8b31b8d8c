import { describe, expect, it } from 'vitest';
import { zWebhookEnv } from './index.ts';
import { sourceKey, tokenBuckets } from './rate-limit.ts';

describe('tokenBuckets', () => {
  it('allows a burst, then the rate, per key', () => {
    const l = tokenBuckets({ rate: 2, burst: 3 });
    const t0 = 1_000_000;
    expect([1, 2, 3].map(() => l.take('a', t0))).toEqual([undefined, undefined, undefined]);
    expect(l.take('a', t0)).toBe(1); // empty: a token in 0.5 s, said in whole seconds
    expect(l.take('b', t0)).toBeUndefined(); // another key has its own bucket
    expect(l.take('a', t0 + 499)).toBe(1);
    // Refilled by 2 per second; a refusal takes nothing.
    expect([l.take('a', t0 + 1000), l.take('a', t0 + 1000), l.take('a', t0 + 1000)]).toEqual([
      undefined,
      undefined,
      1,
    ]);
    expect(l.take('a', t0 + 60_000)).toBeUndefined();
  });

  it('refills no more than the burst after a long pause', () => {
    const l = tokenBuckets({ rate: 10, burst: 2 });
    expect(l.take('a', 0)).toBeUndefined();
    const later = 3_600_000;
    expect([l.take('a', later), l.take('a', later), l.take('a', later)]).toEqual([undefined, undefined, 1]);
  });

  it('keeps at most maxKeys buckets, dropping the least recently used', () => {
    const l = tokenBuckets({ rate: 1, burst: 1 }, 3);
    l.take('a', 0);
    l.take('b', 0);
    l.take('c', 0);
    expect(l.take('a', 0)).toBe(1); // a used again: now the most recent
    for (let i = 0; i < 1000; i++) l.take(`flood-${i}`, 0);
    expect(l.size()).toBe(3);
    const l2 = tokenBuckets({ rate: 1, burst: 1 }, 3);
    l2.take('a', 0);
    l2.take('b', 0);
    l2.take('c', 0);
    l2.take('a', 0); // refused, and a becomes the most recent
    l2.take('d', 0); // drops b, the least recently used
    expect(l2.take('a', 0)).toBe(1); // still limited: its bucket was kept
    expect(l2.take('b', 0)).toBeUndefined(); // forgotten, so a fresh bucket
  });
});

describe('sourceKey', () => {
  it('is the IPv4 address, also when mapped into IPv6', () => {
    expect(sourceKey('10.1.2.3')).toBe('10.1.2.3');
    expect(sourceKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    expect(sourceKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:0db8:0001:0002::1')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:DB8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
    expect(sourceKey(undefined)).toBe('unknown');
  });
});

describe('the rate limits as configured', () => {
  it('refuse a burst below one request: such a bucket never holds a whole token, and would refuse everything', () => {
    for (const scope of ['SOURCE', 'NAMESPACE']) {
      expect(zWebhookEnv.safeParse({ [`TIDEWAY_WEBHOOK_${scope}_BURST`]: '0.5' }).success, scope).toBe(false);
      expect(zWebhookEnv.safeParse({ [`TIDEWAY_WEBHOOK_${scope}_BURST`]: '1' }).success, scope).toBe(true);
    }
  });
});
