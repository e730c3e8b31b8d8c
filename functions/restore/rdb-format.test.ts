import { describe, expect, it } from 'vitest';
import { loadProblem, rdbFormatOf } from './rdb-format.ts';

describe('RDB format', () => {
  it('reads the header of Redis and Valkey 9 files, and nothing else', () => {
    expect(rdbFormatOf(Buffer.from('REDIS0010\xfa\x09redis-ver', 'latin1'))).toEqual({
      magic: 'REDIS',
      version: 10,
    });
    expect(rdbFormatOf(Buffer.from('VALKEY080'))).toEqual({ magic: 'VALKEY', version: 80 });
    for (const bad of ['REDIS001', 'redis0010', 'REDIS00a0', 'VALKEY08', '\x28\xb5\x2f\xfdREDIS', ''])
      expect(rdbFormatOf(Buffer.from(bad, 'latin1')), bad).toBeUndefined();
  });

  it('lets a server load what its release writes and anything older', () => {
    const redis = (version: string) => ({ product: 'redis' as const, version });
    expect(loadProblem({ magic: 'REDIS', version: 10 }, redis('7.0.15'))).toBeUndefined();
    expect(loadProblem({ magic: 'REDIS', version: 9 }, redis('7.0.15'))).toBeUndefined();
    expect(loadProblem({ magic: 'REDIS', version: 11 }, redis('7.2.4'))).toBeUndefined();
    expect(loadProblem({ magic: 'REDIS', version: 12 }, redis('8.0.2'))).toBeUndefined();
    // A release newer than the table loads at least what the newest entry does.
    expect(loadProblem({ magic: 'REDIS', version: 12 }, redis('9.1.0'))).toBeUndefined();
  });

  it('refuses a newer format than the target loads, naming both', () => {
    expect(loadProblem({ magic: 'REDIS', version: 11 }, { product: 'redis', version: '7.0.15' })).toMatch(
      /RDB version 11 cannot be loaded by Redis 7\.0\.15, which loads RDB versions up to 10/,
    );
    expect(loadProblem({ magic: 'REDIS', version: 10 }, { product: 'redis', version: '6.2.14' })).toMatch(
      /up to 9/,
    );
    expect(loadProblem({ magic: 'VALKEY', version: 80 }, { product: 'redis', version: '8.0.0' })).toMatch(
      /written by Valkey 9/,
    );
  });

  it('knows Valkey: up to 11 in 7.2–8.x, VALKEY080 from 9.0, never the Redis 7.4+ range', () => {
    const valkey = (version: string) => ({ product: 'valkey' as const, version });
    expect(loadProblem({ magic: 'REDIS', version: 11 }, valkey('8.1.1'))).toBeUndefined();
    expect(loadProblem({ magic: 'REDIS', version: 10 }, valkey('8.1.1'))).toBeUndefined();
    expect(loadProblem({ magic: 'VALKEY', version: 80 }, valkey('9.0.0'))).toBeUndefined();
    expect(loadProblem({ magic: 'VALKEY', version: 80 }, valkey('8.1.1'))).toMatch(/up to 11/);
    expect(loadProblem({ magic: 'REDIS', version: 12 }, valkey('9.0.0'))).toMatch(/Redis 7\.4\+ formats/);
  });

  it('refuses when the server version says nothing', () => {
    expect(loadProblem({ magic: 'REDIS', version: 9 }, { product: 'redis', version: 'unknown' })).toMatch(
      /cannot tell/,
    );
  });
});
