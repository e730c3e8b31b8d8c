import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fillCelBlocks } from '../shared/api/cel-blocks.ts';
import { generate } from '../shared/api/codegen.ts';
import { CRD_DIR, crdFiles } from '../shared/api/crds.ts';
import { CEL_BLOCKS } from '../shared/api/rules.ts';

// npm run gen:api — writes the CEL rules defined in TypeScript into crds/ (shared/api/rules.ts),
// then regenerates shared/api/generated.ts from crds/ (the source of truth for the types).
for (const { file, text } of crdFiles()) {
  const filled = fillCelBlocks(text, CEL_BLOCKS[file] ?? {});
  if (filled === text) continue;
  writeFileSync(join(CRD_DIR, file), filled);
  process.stdout.write(`wrote ${join(CRD_DIR, file)}\n`);
}
const out = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'shared', 'api', 'generated.ts');
writeFileSync(out, generate(crdFiles().map((f) => f.text)));
process.stdout.write(`wrote ${out}\n`);
