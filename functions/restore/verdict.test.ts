import { describe, expect, it } from 'vitest';
import { judgeLoad, needsPromotion, nextStep, type TargetNow } from './verdict.ts';

const F = 'f'.repeat(40);
const OLD = 'a'.repeat(40);
const NEW = 'b'.repeat(40);
const master = (o: Partial<TargetNow> = {}): TargetNow => ({
  role: 'master',
  replid: OLD,
  loading: false,
  ...o,
});

describe('which data the target of a load holds', () => {
  it('the loaded data, by the feed id: as the id it follows, or the one it continued from once promoted', () => {
    expect(judgeLoad({ replid: F, delivered: true }, master({ role: 'replica', replid: F }))).toBe('loaded');
    expect(judgeLoad({ replid: F, delivered: true }, master({ replid: NEW, replid2: F }))).toBe('loaded');
    // Even when the marker was not written: the id is proof enough.
    expect(judgeLoad({ replid: F, delivered: false }, master({ replid: NEW, replid2: F }))).toBe('loaded');
  });

  it('its own data when the whole RDB never went out, whatever its ids say', () => {
    expect(judgeLoad({ replid: F, delivered: false }, master())).toBe('untouched');
    expect(judgeLoad({ replid: F, delivered: false }, master({ role: 'replica', replid: NEW }))).toBe(
      'untouched',
    );
  });

  it('unknown when the whole RDB went out and it does not carry the feed id (a failed load flushes first)', () => {
    expect(judgeLoad({ replid: F, delivered: true }, master())).toBe('unknown');
  });

  it('nothing yet while it loads or does not answer', () => {
    expect(judgeLoad({ replid: F, delivered: true }, master({ loading: true, replid: F }))).toBe('loading');
    expect(judgeLoad({ replid: F, delivered: true }, undefined)).toBe('unreachable');
  });

  it('promotes only a target that still follows the feed, never one that follows a cluster pod', () => {
    expect(needsPromotion(master({ role: 'replica', masterHost: '10.0.0.1' }), '10.0.0.1')).toBe(true);
    expect(needsPromotion(master({ role: 'replica', masterHost: '10.244.0.7' }), '10.0.0.1')).toBe(false);
    expect(needsPromotion(master(), '10.0.0.1')).toBe(false);
    expect(needsPromotion(undefined, '10.0.0.1')).toBe(false);
  });
});

describe('the step after a load', () => {
  const base = { loads: 1, rollbacks: 0, maxLoads: 3, safetyBackup: 'r-safety' };
  const restore = { of: 'restore' as const, pod: 'cache-0', delivered: true };
  const rollback = { of: 'rollback' as const, pod: 'cache-0', delivered: true };

  it('finishes with the data the target loaded', () => {
    expect(nextStep({ ...base, verdict: 'loaded', load: restore })).toEqual({
      do: 'finish',
      data: 'restored',
    });
    expect(nextStep({ ...base, verdict: 'loaded', load: rollback })).toEqual({
      do: 'finish',
      data: 'rolledBack',
    });
  });

  it('never finishes a load the target took before its end was sent: rolled back, or said to be unknown', () => {
    // Parsed from the socket, a crafted RDB that ends early is taken before the held-back end; the
    // checksum fails only after.
    const error = { reason: 'ChecksumMismatch', message: 'the object changed', retry: false };
    const early = { ...restore, delivered: false };
    expect(nextStep({ ...base, verdict: 'loaded', load: early, error })).toEqual({
      do: 'load',
      of: 'rollback',
    });
    expect(nextStep({ ...base, verdict: 'loaded', load: early })).toEqual({ do: 'load', of: 'rollback' });
    const alone = nextStep({ ...base, safetyBackup: undefined, verdict: 'loaded', load: early, error });
    expect(alone).toMatchObject({ do: 'fail', data: 'unknown', reason: 'LoadedUnverified' });
    expect(alone.do === 'fail' && alone.message).toMatch(
      /whose end was never sent .* not the backup that was checked/,
    );
    expect(
      nextStep({ ...base, verdict: 'loaded', load: { ...rollback, delivered: false }, error }),
    ).toMatchObject({
      do: 'fail',
      data: 'unknown',
      reason: 'RollbackFailed',
    });
  });

  it('rolls back a load that took more than maxmemory; without a safety backup it says what is at risk', () => {
    const error = { reason: 'ExceedsMaxmemory', message: 'the loaded data set counts 80 MiB', retry: false };
    expect(nextStep({ ...base, verdict: 'loaded', load: restore, error })).toEqual({
      do: 'load',
      of: 'rollback',
    });
    const alone = nextStep({ ...base, safetyBackup: undefined, verdict: 'loaded', load: restore, error });
    expect(alone).toMatchObject({ do: 'fail', data: 'overMaxmemory', reason: 'ExceedsMaxmemory' });
    expect(alone.do === 'fail' && alone.message).toMatch(/no safety backup to roll back to: it serves it/);
    // A rollback is never refused for it (the guard is off for rollbacks; whatever it says, done).
    expect(nextStep({ ...base, verdict: 'loaded', load: rollback, error })).toEqual({
      do: 'finish',
      data: 'rolledBack',
    });
  });

  it('loads again after an interruption or a failure that may pass, while attempts remain', () => {
    expect(nextStep({ ...base, verdict: 'untouched', load: restore })).toEqual({ do: 'load', of: 'restore' });
    expect(
      nextStep({
        ...base,
        verdict: 'untouched',
        load: restore,
        error: { reason: 'TargetLost', message: 'x', retry: true },
      }),
    ).toEqual({ do: 'load', of: 'restore' });
  });

  it('fails with the data untouched when attempts are used up or the failure will not pass', () => {
    const spent = nextStep({ ...base, loads: 3, verdict: 'untouched', load: restore });
    expect(spent).toMatchObject({ do: 'fail', data: 'untouched', reason: 'Interrupted' });
    expect(spent.do === 'fail' && spent.message).toMatch(/load 3 of 3.*kept the data it had before/);
    expect(
      nextStep({
        ...base,
        verdict: 'untouched',
        load: restore,
        error: { reason: 'ChecksumMismatch', message: 'changed', retry: false },
      }),
    ).toMatchObject({ do: 'fail', data: 'untouched', reason: 'ChecksumMismatch' });
  });

  it('rolls back a master that may be half-loaded, when there is a safety backup; else says the data is unknown', () => {
    expect(nextStep({ ...base, verdict: 'unknown', load: restore })).toEqual({ do: 'load', of: 'rollback' });
    const none = nextStep({ ...base, safetyBackup: undefined, verdict: 'unknown', load: restore });
    expect(none).toMatchObject({ do: 'fail', data: 'unknown', reason: 'LoadFailed' });
    expect(none.do === 'fail' && none.message).toMatch(/no safety backup/);
  });

  it('a rollback that does not take: tried again while attempts remain, then the data is unknown', () => {
    expect(nextStep({ ...base, verdict: 'untouched', load: rollback, rollbacks: 1 })).toEqual({
      do: 'load',
      of: 'rollback',
    });
    expect(nextStep({ ...base, verdict: 'untouched', load: rollback, rollbacks: 3 })).toMatchObject({
      do: 'fail',
      data: 'unknown',
      reason: 'RollbackFailed',
    });
    expect(nextStep({ ...base, verdict: 'unknown', load: rollback, rollbacks: 1 })).toMatchObject({
      do: 'fail',
      data: 'unknown',
      reason: 'RollbackFailed',
    });
  });

  it('waits while the target loads or does not answer', () => {
    expect(nextStep({ ...base, verdict: 'loading', load: restore })).toMatchObject({ do: 'wait' });
    expect(nextStep({ ...base, verdict: 'unreachable', load: restore })).toMatchObject({ do: 'wait' });
  });
});
