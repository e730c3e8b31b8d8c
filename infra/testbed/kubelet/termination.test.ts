import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { terminationMessage } from './termination.ts';

const dir = await mkdtemp(join(tmpdir(), 'tideway-termination-'));

describe('terminationMessage', () => {
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("reports the termination file; with FallbackToLogsOnError and a failure, the end of this run's log", async () => {
    const file = join(dir, 'termination-log');
    const log = join(dir, 'c.log');
    const earlier = 'earlier run\n';
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`);
    await writeFile(log, `${earlier}${lines.join('\n')}\n`);
    await writeFile(file, 'from the file');
    const base = { file, log, logStart: earlier.length, exitCode: 1, policy: 'FallbackToLogsOnError' };
    expect(terminationMessage(base)).toBe('from the file');
    await writeFile(file, 'x'.repeat(10_000));
    expect(terminationMessage(base)).toHaveLength(4096);
    await writeFile(file, '');
    const tail = terminationMessage(base);
    expect(tail.split('\n').filter(Boolean)).toEqual(lines.slice(-80));
    expect(terminationMessage({ ...base, exitCode: 0 })).toBe('');
    expect(terminationMessage({ ...base, policy: 'File' })).toBe('');
    // Only this run's output, however short.
    await writeFile(log, `${earlier}boom\n`);
    expect(terminationMessage(base)).toBe('boom\n');
    expect(terminationMessage({ ...base, file: undefined, log: join(dir, 'missing') })).toBe('');
  });
});
