import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../infra/testbed/wait.ts';
import { GuideBlockError, runBlocks, type ShellBlock, shellBlocks } from './guide-runner.ts';

const blocks = (...texts: string[]): ShellBlock[] =>
  texts.map((text, i) => ({ index: i + 1, line: 10 * (i + 1), text: `${text}\n` }));

describe('shellBlocks', () => {
  it('takes the ```sh blocks in order with their lines, indented ones too, and skips ```text', () => {
    const md = [
      '# Guide', // 1
      '```sh', // 2
      'echo one',
      '```',
      '```text', // 5
      'one',
      '```',
      '1. in a list:', // 8
      '   ```sh', // 9
      '   echo two',
      '     echo indented',
      '   ```',
      '````sh', // 13
      'cat <<EOF',
      '```',
      'EOF',
      '````',
    ].join('\n');
    expect(shellBlocks(md)).toEqual([
      { index: 1, line: 2, text: 'echo one\n' },
      { index: 2, line: 9, text: 'echo two\n  echo indented\n' },
      { index: 3, line: 13, text: 'cat <<EOF\n```\nEOF\n' },
    ]);
  });

  it('refuses a block the test would not run, and one never closed', () => {
    for (const info of ['bash', 'shell', 'console', 'yaml', ''])
      expect(() => shellBlocks(`text\n\`\`\`${info}\nkubectl delete ns demo\n\`\`\`\n`)).toThrow(
        `line 2: a \`\`\`${info} block`,
      );
    expect(() => shellBlocks('```sh\necho hi\n')).toThrow('line 1: the ```sh block is never closed');
  });
});

describe('runBlocks', () => {
  let cwd = '';
  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'tideway-guide-runner-'));
  });
  afterAll(() => rm(cwd, { recursive: true, force: true }));
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' };
  const run = (b: ShellBlock[], more: Partial<Parameters<typeof runBlocks>[0]> = {}) =>
    runBlocks({ blocks: b, file: 'guide.md', cwd, env, timeoutMs: 20_000, ...more });

  it('runs the blocks in one shell: variables, functions and the directory carry over', async () => {
    const runs = await run(
      blocks(
        'mkdir -p sub && cd sub\nplain=not-exported\ngreet() { echo "hello $1"; }',
        'greet "$plain from $(basename "$PWD")"\necho err >&2',
      ),
    );
    expect(runs.map((r) => r.output)).toEqual(['', 'hello not-exported from sub\nerr']);
  });

  it('gives no block the next one as input, and sources what `after` returns before the next', async () => {
    const runs = await run(blocks('export WHO=guide\ncat', 'echo "$WHO"'), {
      after: ({ block }) => (block.index === 1 ? "export WHO='test bed'" : undefined),
    });
    expect(runs.map((r) => r.output)).toEqual(['', 'test bed']);
  });

  it('fails at the first failing command, with the block and its output, and runs nothing after', async () => {
    for (const failing of ['false', 'false | true', 'echo "$UNSET_VARIABLE"']) {
      const error = await run(
        blocks('echo first', `echo before\n${failing}\necho after`, `touch '${join(cwd, 'ran')}'`),
      ).catch((e: unknown) => e);
      expect(error, failing).toBeInstanceOf(GuideBlockError);
      const e = error as GuideBlockError;
      expect(e.block.index).toBe(2);
      expect(e.message).toContain(`guide.md block 2 (line 20) failed (the shell exited with `);
      expect(e.message).toContain(`--- the block ---\necho before\n${failing}\necho after\n`);
      expect(e.output).toContain('before');
      expect(e.output).not.toContain('after');
      expect(existsSync(join(cwd, 'ran'))).toBe(false);
    }
  });

  it('ends a block that runs too long, with every process it started', async () => {
    const pidFile = join(cwd, 'pid');
    const started = performance.now();
    const error = await run(blocks(`echo waiting\nsleep 60 & echo $! > '${pidFile}'\nwait`), {
      timeoutMs: 1500,
    }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((error as GuideBlockError).message).toContain('block 1 (line 10) timed out after 1.5 s');
    expect((error as GuideBlockError).output).toContain('waiting');
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    // The background sleep is gone too (once reaped: allow a moment).
    await until(
      `process ${pid} gone`,
      async () => {
        try {
          process.kill(pid, 0);
          return undefined;
        } catch {
          return true;
        }
      },
      5000,
      50,
    );
  });
});
