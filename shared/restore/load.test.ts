import { describe, expect, it } from 'vitest';
import { loadModeFor, maxmemoryProblem, memoryProblem } from './load.ts';

const GiB = 2 ** 30;
const R7 = { product: 'redis', version: '7.0.15' };

describe('loadModeFor', () => {
  it('parses from the socket into an empty master, whatever its memory', () => {
    expect(loadModeFor({ server: R7, keys: 0 })).toMatchObject({
      mode: 'memory',
      why: expect.stringMatching(/holds no keys/),
    });
    expect(loadModeFor({ server: R7, keys: 0, rss: GiB, limit: GiB, incoming: 4 * GiB }).mode).toBe('memory');
  });

  it('parses beside the current data only when both fit the limit with room to spare', () => {
    // 1 GiB in use + 1 GiB to load x1.5 = 2.5 GiB: fits 90 % of 3 GiB (2.7), not of 2.75 GiB (2.475).
    const fits = loadModeFor({ server: R7, keys: 10, rss: GiB, limit: 3 * GiB, incoming: GiB });
    expect(fits).toMatchObject({ mode: 'memory', why: expect.stringMatching(/beside the current data/) });
    expect(fits.why).toContain(
      '1024 MiB in use + 1024 MiB to load (x1.5) fit in 90 % of the 3072 MiB memory limit',
    );
    const tight = loadModeFor({ server: R7, keys: 10, rss: GiB, limit: 2.75 * GiB, incoming: GiB });
    expect(tight).toMatchObject({
      mode: 'disk',
      why: expect.stringMatching(/^received to disk first: .* exceed 90 %/),
    });
    // The data in use counts: the same limit and load with 0.5 GiB less in use fits.
    expect(loadModeFor({ server: R7, keys: 10, rss: 0.5 * GiB, limit: 2.75 * GiB, incoming: GiB }).mode).toBe(
      'memory',
    );
  });

  it('receives to disk when anything it would weigh is unknown', () => {
    const known = { server: R7, keys: 10, rss: 1, limit: 100 * GiB, incoming: 1 };
    expect(loadModeFor(known).mode).toBe('memory');
    expect(loadModeFor({ ...known, limit: undefined }).why).toMatch(/no memory limit/);
    expect(loadModeFor({ ...known, incoming: undefined }).why).toMatch(/does not record how much memory/);
    expect(loadModeFor({ ...known, rss: undefined }).why).toMatch(/does not report its memory/);
    for (const unknown of ['limit', 'incoming', 'rss'] as const)
      expect(loadModeFor({ ...known, [unknown]: undefined }).mode, unknown).toBe('disk');
  });
});

describe('loadModeFor: the server', () => {
  it('parses from the socket only on servers that check the end of a transfer before they swap', () => {
    const empty = { keys: 0 };
    for (const server of [
      R7,
      { product: 'redis', version: '7.2.4' },
      { product: 'valkey', version: '8.1.1' },
    ])
      expect(loadModeFor({ ...empty, server }).mode, server.version).toBe('memory');
    // Redis 6.2 drops its old data set before it checks the EOF mark: a crafted RDB that ends early
    // would stay loaded. So would one from a server whose version is not known.
    for (const server of [{ product: 'redis', version: '6.2.14' }, { product: 'redis' }, {}])
      expect(loadModeFor({ ...empty, server }), JSON.stringify(server)).toMatchObject({
        mode: 'disk',
        why: expect.stringMatching(/^received to disk first: .*replaces its data before it checks the end/),
      });
  });
});

describe('memoryProblem', () => {
  it('refuses a data set that alone takes more than 90 % of the limit, and nothing it cannot weigh', () => {
    expect(memoryProblem({ limit: GiB, incoming: 0.95 * GiB })).toMatch(
      /took 973 MiB of memory where it was taken, more than 90 % of the master's 1024 MiB memory limit/,
    );
    expect(memoryProblem({ limit: GiB, incoming: 0.85 * GiB })).toBeUndefined();
    expect(memoryProblem({ incoming: 100 * GiB })).toBeUndefined();
    expect(memoryProblem({ limit: GiB })).toBeUndefined();
  });
});

describe('maxmemoryProblem', () => {
  const MiB = 2 ** 20;
  const lru = { bytes: 64 * MiB, policy: 'allkeys-lru' };
  it('refuses a data set that counted more than the master will hold, saying what Redis would do', () => {
    expect(maxmemoryProblem({ target: lru, counted: 80 * MiB, used: 78 * MiB, of: 'backup' })).toMatch(
      /the backup's data set counted 80 MiB against maxmemory where it was taken, more than the master's maxmemory of 64 MiB: with maxmemory-policy allkeys-lru Redis would evict keys of the restored data .*; set spec.config.maxmemory to at least 81mb and, once the master runs with it, restore again/,
    );
    expect(
      maxmemoryProblem({
        target: { bytes: 64 * MiB, policy: 'noeviction' },
        counted: 65 * MiB,
        of: 'loaded',
      }),
    ).toMatch(
      /^the loaded data set counts 65 MiB .*noeviction the master would refuse every write that needs memory/,
    );
    expect(
      maxmemoryProblem({
        target: { bytes: 64 * MiB, policy: 'volatile-lru' },
        counted: 65 * MiB,
        of: 'backup',
      }),
    ).toMatch(/evict restored keys that have a TTL .* and refuse writes that need memory once none is left/);
  });

  it("lets through a full cache's own backup: its count sits just above the limit it lived under", () => {
    // Redis evicts before each write, so an LRU cache at its limit counts a write's worth above it.
    const full = 64 * MiB + 200_000;
    expect(maxmemoryProblem({ target: lru, source: 64 * MiB, counted: full, of: 'backup' })).toBeUndefined();
    expect(maxmemoryProblem({ target: lru, source: 64 * MiB, counted: full, of: 'loaded' })).toBeUndefined();
    // ...but not far over it (another encoding, a noeviction source lowered below its data)...
    expect(maxmemoryProblem({ target: lru, source: 64 * MiB, counted: 150 * MiB, of: 'loaded' })).toMatch(
      /counts 150 MiB/,
    );
    // ...nor into a smaller limit, nor from a source without one.
    expect(maxmemoryProblem({ target: lru, source: 128 * MiB, counted: full, of: 'backup' })).toMatch(
      /counted 64 MiB/,
    );
    expect(maxmemoryProblem({ target: lru, source: 0, counted: full, of: 'backup' })).toMatch(
      /at least 66mb/,
    );
  });

  it('falls back to used_memory for an older manifest, and says so', () => {
    expect(
      maxmemoryProblem({ target: { bytes: 64 * MiB, policy: 'allkeys-lru' }, used: 66 * MiB, of: 'backup' }),
    ).toMatch(
      /counted 66 MiB against maxmemory where it was taken \(used_memory: this backup predates the finer figure\)/,
    );
  });

  it('lets through what it cannot weigh, and a master without maxmemory', () => {
    expect(
      maxmemoryProblem({ target: { bytes: 0, policy: 'noeviction' }, counted: GiB, of: 'backup' }),
    ).toBeUndefined();
    expect(maxmemoryProblem({ counted: GiB, of: 'backup' })).toBeUndefined();
    expect(maxmemoryProblem({ target: lru, of: 'backup' })).toBeUndefined();
  });
});
