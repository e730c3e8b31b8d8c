import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeEnvFile } from './env-file.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('writeEnvFile', () => {
  // Whoever waits for the file reads it as soon as it exists (the lifecycle test once read it
  // empty). A value of 8 MiB makes the write take many chunks, with the event loop free between
  // them: a reader polling there sees any state the file passes through.
  it('never shows a reader a partial file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tideway-env-'));
    dirs.push(dir);
    const file = join(dir, 'local', 'env');
    const big = 'x'.repeat(8 << 20);
    const seen = new Set<string>();
    let done = false;
    const look = () => {
      if (!existsSync(file)) return;
      const text = readFileSync(file, 'utf8');
      seen.add(text.endsWith(`export PATH='/bin':"$PATH"\n`) ? 'whole' : `partial (${text.length} chars)`);
    };
    const poll = () => {
      look();
      if (!done) setImmediate(poll);
    };
    poll();
    await writeEnvFile(file, { KUBECONFIG: '/k', BIG: big }, '/bin');
    done = true;
    // The write may end before the poll's next turn: one look at the end, so 'whole' is always seen.
    look();
    expect([...seen]).toEqual(['whole']);
    expect(readFileSync(file, 'utf8')).toContain("export KUBECONFIG='/k'\n");
    expect(existsSync(`${file}.partial`)).toBe(false);
  });
});
