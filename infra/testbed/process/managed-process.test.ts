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

  /** Running, not a zombie waiting to be reaped (its parent gone, init reaps it when it will). */
  const alive = (pid: number) => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };

  it('stops a container with everything it forked, as a runtime stops its cgroup', async () => {
    const logFile = join(dir, 'container.log');
    // A server with a fork of its own (redis-server streaming a snapshot to a replica).
    const proc = startProcess({
      name: 'container',
      command: 'sh',
      args: ['-c', 'sleep 100 & echo $!; wait'],
      logFile,
      testbedId: 'unit',
      group: true,
    });
    let forked = 0;
    for (let i = 0; i < 50 && !forked; i++) {
      await new Promise((r) => setTimeout(r, 50));
      forked = Number(readFileSync(logFile, 'utf8').trim()) || 0;
    }
    expect(alive(forked)).toBe(true);
    await proc.stop(1000);
    await new Promise((r) => setTimeout(r, 200));
    expect(alive(forked)).toBe(false);
  });

  it('ends what a container forked when its main process ends by itself', async () => {
    const logFile = join(dir, 'ended.log');
    const proc = startProcess({
      name: 'ended',
      command: 'sh',
      args: ['-c', 'sleep 100 & echo $!; sleep 0.3; exit 0'],
      logFile,
      testbedId: 'unit',
      group: true,
    });
    await proc.exited;
    const forked = Number(readFileSync(logFile, 'utf8').trim());
    await new Promise((r) => setTimeout(r, 200));
    expect(forked).toBeGreaterThan(0);
    expect(alive(forked)).toBe(false);
  });
});
