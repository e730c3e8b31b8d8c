import { describe, expect, it } from 'vitest';
import { loadModeFor, maxmemoryProblem, memoryProblem } from './load.ts';

const GiB = 2 ** 30;

describe('loadModeFor', () => {
  it('parses from the socket into an empty master, whatever its memory', () => {
    expect(loadModeFor({ keys: 0 })).toMatchObject({
      mode: 'memory',
      why: expect.stringMatching(/holds no keys/),
    });
    expect(loadModeFor({ keys: 0, rss: GiB, limit: GiB, incoming: 4 * GiB }).mode).toBe('memory');
  });

  it('parses beside the current data only when both fit the limit with room to spare', () => {
    // 1 GiB in use + 1 GiB to load x1.5 = 2.5 GiB: fits 90 % of 3 GiB (2.7), not of 2.75 GiB (2.475).
    const fits = loadModeFor({ keys: 10, rss: GiB, limit: 3 * GiB, incoming: GiB });
    expect(fits).toMatchObject({ mode: 'memory', why: expect.stringMatching(/beside the current data/) });
    expect(fits.why).toContain(
      '1024 MiB in use + 1024 MiB to load (x1.5) fit in 90 % of the 3072 MiB memory limit',
    );
    const tight = loadModeFor({ keys: 10, rss: GiB, limit: 2.75 * GiB, incoming: GiB });
    expect(tight).toMatchObject({
      mode: 'disk',
      why: expect.stringMatching(/^received to disk first: .* exceed 90 %/),
    });
    // The data in use counts: the same limit and load with 0.5 GiB less in use fits.
    expect(loadModeFor({ keys: 10, rss: 0.5 * GiB, limit: 2.75 * GiB, incoming: GiB }).mode).toBe('memory');
  });

  it('receives to disk when anything it would weigh is unknown', () => {
    const known = { keys: 10, rss: 1, limit: 100 * GiB, incoming: 1 };
    expect(loadModeFor(known).mode).toBe('memory');
    expect(loadModeFor({ ...known, limit: undefined }).why).toMatch(/no memory limit/);
    expect(loadModeFor({ ...known, incoming: undefined }).why).toMatch(/does not record how much memory/);
    expect(loadModeFor({ ...known, rss: undefined }).why).toMatch(/does not report its memory/);
    for (const unknown of ['limit', 'incoming', 'rss'] as const)
      expect(loadModeFor({ ...known, [unknown]: undefined }).mode, unknown).toBe('disk');
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
  it('refuses a data set that counted more than the master will hold, saying what Redis would do', () => {
    expect(
      maxmemoryProblem({
        maxmemory: { bytes: 64 * MiB, policy: 'allkeys-lru' },
        counted: 65 * MiB,
        used: 60 * MiB,
      }),
    ).toMatch(
      /counted 65 MiB against maxmemory where it was taken, more than the master's maxmemory of 64 MiB: with maxmemory-policy allkeys-lru Redis would evict keys of the restored data/,
    );
    expect(
      maxmemoryProblem({ maxmemory: { bytes: 64 * MiB, policy: 'noeviction' }, counted: 65 * MiB }),
    ).toMatch(
      /noeviction the master would refuse every write once it serves again; raise spec.config.maxmemory above 65 MiB/,
    );
  });

  it('weighs what counted against maxmemory, not the buffers Redis leaves out', () => {
    // used_memory above the limit only by its replication backlog: a full LRU cache's own backup.
    expect(
      maxmemoryProblem({
        maxmemory: { bytes: 64 * MiB, policy: 'allkeys-lru' },
        counted: 64 * MiB,
        used: 66 * MiB,
      }),
    ).toBeUndefined();
  });

  it('falls back to used_memory for an older manifest, and says so', () => {
    expect(
      maxmemoryProblem({ maxmemory: { bytes: 64 * MiB, policy: 'volatile-ttl' }, used: 66 * MiB }),
    ).toMatch(
      /counted 66 MiB against maxmemory where it was taken \(used_memory: this backup predates the finer figure\)/,
    );
  });

  it('lets through what it cannot weigh, and a master without maxmemory', () => {
    expect(maxmemoryProblem({ maxmemory: { bytes: 0, policy: 'noeviction' }, counted: GiB })).toBeUndefined();
    expect(maxmemoryProblem({ counted: GiB })).toBeUndefined();
    expect(maxmemoryProblem({ maxmemory: { bytes: 64 * MiB, policy: 'allkeys-lru' } })).toBeUndefined();
  });
});
