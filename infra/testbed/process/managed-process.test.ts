import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess } from './managed-process.ts';

describe('startProcess', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tideway-proc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps logging what the process's own children write after it exited", async () => {
    const logFile = join(dir, 'forks.log');
    // As redis-server's fork for a replica sync does: a child holds stdout past the parent's exit.
    const proc = startProcess({
      name: 'forks',
      command: 'sh',
      args: ['-c', 'echo parent; (sleep 0.3; echo child) & exit 0'],
      logFile,
      testbedId: 'unit',
    });
    expect((await proc.exited).code).toBe(0);
    await new Promise((r) => setTimeout(r, 800));
    expect(readFileSync(logFile, 'utf8')).toBe('parent\nchild\n');
  });
});
