import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// npm test: static checks, then every test (unit and e2e on the real test bed). Extra arguments
// go to vitest (e.g. `npm test -- test/testbed`).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const binOf = (name: string) => join(root, 'node_modules', '.bin', name);
const step = (title: string, command: string, args: string[]) => {
  process.stderr.write(`\n[tideway] ${title}\n`);
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  return r.status ?? 1;
};

const extra = process.argv.slice(2);
let failed = 0;
if (extra.length === 0) {
  failed += step('typecheck (tsc)', binOf('tsc'), ['--noEmit', '-p', 'tsconfig.json']) === 0 ? 0 : 1;
  failed += step('lint (biome)', binOf('biome'), ['check', '.']) === 0 ? 0 : 1;
}
const report = join(root, '.tideway', 'vitest.json');
mkdirSync(dirname(report), { recursive: true });
const status = step('tests (vitest)', binOf('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...extra,
]);

// The closing line CI reads, in the plain form any runner can be judged by.
try {
  const r = JSON.parse(readFileSync(report, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    numTodoTests: number;
  };
  const checks = failed > 0 ? ` (${failed} static check(s) failed)` : '';
  process.stdout.write(
    `\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped${checks}\n`,
  );
} catch {
  process.stdout.write('\ntests: 0 passed, 1 failed (no vitest report)\n');
}
process.exit(status !== 0 || failed > 0 ? 1 : 0);
