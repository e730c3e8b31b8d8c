import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join } from 'node:path';
import { init, parse } from 'es-module-lexer';

/**
 * The image holds its code as JavaScript: Node loads its TypeScript stripper for the first `.ts`
 * module a process imports, ~18 MiB of every function's RSS and some start-up. The transform is
 * the one Node applies at run time (`stripTypeScriptTypes`, mode `strip`): types become
 * whitespace, so every line and column — and every stack trace — is the source's. Relative
 * specifiers ending in `.ts` become `.js`, as tsc's `rewriteRelativeImportExtensions` does.
 */
const TS = /\.ts$/;
const RELATIVE_TS = /^\.{1,2}\/.*\.ts$/;

/** `shared/runtime/worker.ts` → `shared/runtime/worker.js`: a source's path in the image. */
export const imagePathOf = (file: string): string => file.replace(TS, '.js');

/** One module's JavaScript: types stripped, relative `.ts` imports (static and dynamic) made `.js`. */
export const compileModule = async (source: string, file: string): Promise<string> => {
  const js = stripTypeScriptTypes(source, { mode: 'strip' });
  await init;
  const [imports] = parse(js, file);
  let out = '';
  let at = 0;
  for (const i of imports) {
    if (i.n === undefined || !RELATIVE_TS.test(i.n)) continue;
    // For a dynamic import, s..e is the argument with its quotes; for a static one, the text.
    const text = js.slice(i.s, i.e);
    const inner = text.indexOf(i.n);
    if (inner < 0) throw new Error(`${file}: cannot rewrite the import of ${i.n} (written as ${text})`);
    const end = i.s + inner + i.n.length;
    out += `${js.slice(at, end - 3)}.js`;
    at = end;
  }
  return out + js.slice(at);
};

/**
 * Writes `files` (paths relative to `root`) under `out`: TypeScript modules as JavaScript at
 * `imagePathOf(path)`, everything else as it is.
 */
export const compileFiles = async (root: string, files: readonly string[], out: string): Promise<void> => {
  for (const f of files) {
    const target = join(out, imagePathOf(f));
    await mkdir(dirname(target), { recursive: true });
    if (TS.test(f)) await writeFile(target, await compileModule(await readFile(join(root, f), 'utf8'), f));
    else await copyFile(join(root, f), target);
  }
};
