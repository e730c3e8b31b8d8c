import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
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

  it('holds no tests and nothing outside the code trees', () => {
    const files = selectImageFiles(ROOT);
    expect(files.filter((f) => f.endsWith('.test.ts'))).toEqual([]);
    expect(files.filter((f) => !/^(shared|functions)\//.test(f))).toEqual(['package.json', 'serverless.yml']);
  });
});
