import { describe, expect, it } from 'vitest';
import { type Lock, prodTreeProblems } from './deps.ts';

const LOCK: Lock = {
  packages: {
    '': { version: '0.1.0' },
    'node_modules/zod': { version: '4.6.7', integrity: 'sha512-zod' },
    'node_modules/vitest': { version: '4.1.12', integrity: 'sha512-vitest', dev: true },
    'node_modules/@biomejs/cli-linux-x64': {
      version: '2.6.8',
      integrity: 'sha512-b',
      dev: true,
      optional: true,
    },
    'node_modules/fsevents': { version: '2.3.3', integrity: 'sha512-fse', optional: true },
  },
};

const installed = (packages: Lock['packages']): Lock => ({ packages });

describe('a production install checked against the lock', () => {
  it('passes the lock production packages, optional ones present or not', () => {
    const zod = LOCK.packages['node_modules/zod']!;
    expect(prodTreeProblems(LOCK, installed({ 'node_modules/zod': zod }))).toEqual([]);
    expect(
      prodTreeProblems(
        LOCK,
        installed({
          'node_modules/zod': zod,
          'node_modules/fsevents': LOCK.packages['node_modules/fsevents']!,
        }),
      ),
    ).toEqual([]);
  });

  it('names a dev package that was installed', () => {
    expect(
      prodTreeProblems(
        LOCK,
        installed({
          'node_modules/zod': LOCK.packages['node_modules/zod']!,
          'node_modules/vitest': LOCK.packages['node_modules/vitest']!,
        }),
      ),
    ).toEqual(['node_modules/vitest: a dev dependency, installed']);
  });

  it('names a missing production package, another version or integrity, and a package the lock lacks', () => {
    expect(prodTreeProblems(LOCK, installed({}))).toEqual([
      'node_modules/zod: locked for production, not installed',
    ]);
    expect(
      prodTreeProblems(
        LOCK,
        installed({ 'node_modules/zod': { version: '4.6.8', integrity: 'sha512-zod' } }),
      ),
    ).toHaveLength(1);
    expect(
      prodTreeProblems(
        LOCK,
        installed({ 'node_modules/zod': { version: '4.6.7', integrity: 'sha512-other' } }),
      ),
    ).toHaveLength(1);
    expect(
      prodTreeProblems(
        LOCK,
        installed({
          'node_modules/zod': LOCK.packages['node_modules/zod']!,
          'node_modules/left-pad': { version: '1.0.0' },
        }),
      ),
    ).toEqual(['node_modules/left-pad: installed, not in the lock']);
  });
});
