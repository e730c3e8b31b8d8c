import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// npm test: static checks, then every test: unit and e2e (one shared test bed), then lifecycle
// (starts and stops test beds itself, so it runs after the e2e bed is gone). Extra arguments go
// to a single vitest run instead (e.g. `npm test -- test/testbed`).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const binOf = (name: string) => join(root, 'node_modules', '.bin', name);
const step = (title: string, command: string, args: string[]) => {
  process.stderr.write(`\n[tideway] ${title}\n`);
  return spawnSync(command, args, { cwd: root, stdio: 'inherit' }).status ?? 1;
};

type Report = {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults?: {
    name: string;
    message?: string;
    assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
};
const totals = { passed: 0, failed: 0, skipped: 0 };
/** Each failed test, named with its file and the first lines of why: repeated at the very end. */
const failures: string[] = [];
const firstLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 6)
    .map((l) => `      ${l}`)
    .join('\n');
const failuresOf = (r: Report) =>
  (r.testResults ?? []).flatMap((file) => {
    const where = relative(root, file.name);
    const tests = (file.assertionResults ?? [])
      .filter((a) => a.status === 'failed')
      .map((a) => `  ${where} > ${a.fullName}\n${firstLines((a.failureMessages ?? []).join('\n'))}`);
    // A file that failed outside any test (an import, a hook): its own message.
    return tests.length === 0 && file.message ? [`  ${where}\n${firstLines(file.message)}`] : tests;
  });
const vitest = (title: string, args: string[]) => {
  const report = join(root, '.tideway', `vitest-${totals.passed + totals.failed}-${Date.now()}.json`);
  mkdirSync(dirname(report), { recursive: true });
  const status = step(title, binOf('vitest'), [
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...args,
  ]);
  try {
    const r = JSON.parse(readFileSync(report, 'utf8')) as Report;
    totals.passed += r.numPassedTests;
    totals.failed += r.numFailedTests;
    totals.skipped += r.numPendingTests + r.numTodoTests;
    failures.push(...failuresOf(r));
    rmSync(report);
  } catch {
    totals.failed += 1; // no report: vitest itself failed (e.g. the global setup)
  }
  return status;
};

const extra = process.argv.slice(2);
let failed = 0;
if (extra.length > 0) {
  failed += vitest('tests (vitest)', extra) === 0 ? 0 : 1;
} else {
  failed += step('typecheck (tsc)', binOf('tsc'), ['--noEmit', '-p', 'tsconfig.json']) === 0 ? 0 : 1;
  failed += step('lint (biome)', binOf('biome'), ['check', '.']) === 0 ? 0 : 1;
  failed += vitest('unit and e2e tests (vitest)', ['--project', 'unit', '--project', 'e2e']) === 0 ? 0 : 1;
  failed += vitest('lifecycle tests (vitest)', ['--project', 'lifecycle']) === 0 ? 0 : 1;
}

if (failures.length > 0) process.stdout.write(`\nfailed:\n${failures.join('\n')}\n`);
// The closing line CI reads, in the plain form any runner is judged by.
process.stdout.write(
  `\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`,
);
process.exit(failed > 0 || totals.failed > 0 ? 1 : 0);
