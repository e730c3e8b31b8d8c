import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '../shared/api/codegen.ts';
import { crdTexts } from '../shared/api/crds.ts';

// npm run gen:api — regenerates shared/api/generated.ts from crds/ (the source of truth).
const out = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'shared', 'api', 'generated.ts');
writeFileSync(out, generate(crdTexts()));
process.stdout.write(`wrote ${out}\n`);
