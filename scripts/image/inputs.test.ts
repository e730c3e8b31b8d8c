import { readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadServerless } from '../../shared/runtime/config.ts';
import { containerignore, selectImageFiles } from './inputs.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('what of the checkout goes into the image', () => {
  it('has a .containerignore equal to the one made from the selection (regenerate on a change)', () => {
    expect(readFileSync(join(ROOT, '.containerignore'), 'utf8')).toBe(containerignore());
  });

  it('holds every handler module of serverless.yml, the worker the image starts, and files read at run time', async () => {
    const files = new Set(selectImageFiles(ROOT));
    const config = await loadServerless(join(ROOT, 'serverless.yml'));
    for (const fn of Object.values(config.functions))
      expect(files).toContain(`${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`);
    for (const f of [
      'shared/runtime/worker.ts',
      'functions/webhook/openapi.json',
      'serverless.yml',
      'package.json',
    ])
      expect(files).toContain(f);
  });

  it('holds no tests, no test fixtures and nothing outside the code trees', () => {
    const files = selectImageFiles(ROOT);
    expect(files.filter((f) => f.endsWith('.test.ts') || f.endsWith('/fixture.ts'))).toEqual([]);
    expect(files.filter((f) => !/^(shared|functions)\//.test(f))).toEqual(['package.json', 'serverless.yml']);
  });

  it('holds every file its code imports: nothing in it needs a file left out', () => {
    const files = new Set(selectImageFiles(ROOT));
    const missing = [...files]
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) =>
        [...readFileSync(join(ROOT, f), 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map(
          (m) => ({ from: f, to: posix.join(posix.dirname(f), m[1] ?? '') }),
        ),
      )
      .filter((i) => !files.has(i.to));
    expect(missing).toEqual([]);
  });
});
