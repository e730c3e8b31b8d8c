import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileFiles, compileModule, imagePathOf } from './compile.ts';
import { selectImageFiles } from './inputs.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('the image code as JavaScript', () => {
  it('strips types in place and makes relative .ts specifiers .js, static and dynamic', async () => {
    const src = [
      "import type { A } from './a.ts';",
      "import { b, type B } from '../b/b.ts';",
      "export { c } from './c.ts';",
      "export * from './d.ts';",
      "import x from 'pkg/x.ts';",
      "import json from './data.json' with { type: 'json' };",
      'const n: number = 1;',
      "const m = await import('./m.ts');",
      'const s = "import(\'./not-code.ts\')";',
      'export const f = (v: A): B => v as unknown as B;',
    ].join('\n');
    const js = await compileModule(src, 'x.ts');
    const lines = js.split('\n');
    // Same line count and line lengths where nothing was rewritten: stack traces point at the source.
    expect(lines).toHaveLength(10);
    expect(lines[0]?.trim()).toBe('');
    expect(lines[1]).toBe("import { b,        } from '../b/b.js';");
    expect(lines[2]).toBe("export { c } from './c.js';");
    expect(lines[3]).toBe("export * from './d.js';");
    expect(lines[4]).toBe("import x from 'pkg/x.ts';");
    expect(lines[5]).toBe("import json from './data.json' with { type: 'json' };");
    expect(lines[6]).toBe('const n         = 1;');
    expect(lines[7]).toBe("const m = await import('./m.js');");
    expect(lines[8]).toBe('const s = "import(\'./not-code.ts\')";');
    expect(lines[9]).not.toMatch(/: A|: B|as unknown/);
  });

  it('refuses syntax Node cannot strip (it would not run in the checkout either)', async () => {
    await expect(compileModule('enum E { A }', 'e.ts')).rejects.toThrow();
  });

  it("compiles the image's own trees into modules Node loads with its type stripper off", async () => {
    const out = await mkdtemp(join(tmpdir(), 'tideway-compile-'));
    try {
      const files = selectImageFiles(ROOT);
      await compileFiles(ROOT, files, out);
      // Every source has its image path, and no TypeScript is left.
      const worker = await readFile(join(out, imagePathOf('shared/runtime/worker.ts')), 'utf8');
      expect(worker).toContain("import('./consumer.js')");
      expect(worker).not.toMatch(/from '\.{1,2}\/[^']*\.ts'/);
      // Load every function's module (and what the worker loads for events) as the image does.
      const probe = join(out, 'probe.mjs');
      const modules = files
        .filter((f) => /^functions\/[^/]+\/index\.ts$/.test(f) || f === 'shared/runtime/consumer.ts')
        .map((f) => join(out, imagePathOf(f)));
      expect(modules.length).toBeGreaterThanOrEqual(8);
      await writeFile(
        probe,
        `for (const m of ${JSON.stringify(modules)}) await import(m);\nprocess.stdout.write('loaded');\n`,
      );
      // Resolve packages from the checkout's node_modules, as the image resolves its own.
      await symlink(join(ROOT, 'node_modules'), join(out, 'node_modules'));
      const r = spawnSync(process.execPath, ['--no-experimental-strip-types', probe], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('loaded');
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 90_000);
});
