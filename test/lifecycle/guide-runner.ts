import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fenced ```sh block of a Markdown file: the commands a reader types, in order. */
export type ShellBlock = { index: number; line: number; text: string };

/** Info strings a guide may use: `sh` is run, `text` is output shown to the reader. */
const KNOWN = new Set(['sh', 'text']);

/**
 * The ```sh blocks of `markdown`, in order (fences may be indented, as inside a list). Any other
 * fenced block but ```text is refused: a command the test would not run must not be in the guide.
 */
export const shellBlocks = (markdown: string): ShellBlock[] => {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const [, indent = '', fence = '', info = ''] = open;
    if (!KNOWN.has(info))
      throw new Error(
        `line ${i + 1}: a \`\`\`${info} block; commands go in \`\`\`sh blocks (each is run by the test), output in \`\`\`text`,
      );
    const body: string[] = [];
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    let j = i + 1;
    for (; j < lines.length && !close.test(lines[j] ?? ''); j++) {
      const l = lines[j] ?? '';
      body.push(l.startsWith(indent) ? l.slice(indent.length) : l.trimStart());
    }
    if (j === lines.length) throw new Error(`line ${i + 1}: the \`\`\`${info} block is never closed`);
    if (info === 'sh') blocks.push({ index: blocks.length + 1, line: i + 1, text: `${body.join('\n')}\n` });
    i = j;
  }
  return blocks;
};

/** A block that failed or ran out of time; the message holds its text and its output. */
export class GuideBlockError extends Error {
  override readonly name = 'GuideBlockError';
  readonly block: ShellBlock;
  readonly output: string;
  constructor(block: ShellBlock, output: string, why: string, file: string) {
    super(
      `${file} block ${block.index} (line ${block.line}) ${why}\n--- the block ---\n${block.text}--- its output ---\n${output.slice(-12_000)}`,
    );
    this.block = block;
    this.output = output;
  }
}

export type BlockRun = { block: ShellBlock; output: string; seconds: number };

/**
 * Runs the blocks one after another in ONE `bash -euo pipefail`, as a reader pasting them into
 * one terminal: variables, functions and the working directory carry over, and the first
 * failing command ends the run. Each block is sourced from a file with stdin from /dev/null, so
 * no command can swallow the blocks after it. `after` runs once a block has succeeded, before
 * the next one starts; shell text it returns is sourced then (to change variables, say).
 */
export const runBlocks = async (o: {
  blocks: readonly ShellBlock[];
  file: string;
  cwd: string;
  env: Readonly<Record<string, string>>;
  /** Per block. */
  timeoutMs: number;
  after?: (run: BlockRun) => Promise<string | undefined> | string | undefined;
  log?: (line: string) => void;
}): Promise<BlockRun[]> => {
  const dir = await mkdtemp(join(tmpdir(), 'tideway-guide-'));
  const token = randomBytes(8).toString('hex');
  const marker = (n: number) => `::guide-block-done ${token} ${n}::`;
  const shell = spawn('bash', ['--noprofile', '--norc', '-euo', 'pipefail'], {
    cwd: o.cwd,
    env: { ...o.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // its own process group: a timeout ends every command the block started
  });
  let output = '';
  let partial = ''; // the log shows whole lines; a chunk may end inside one
  const onData = (d: Buffer) => {
    output += d.toString();
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line && !line.includes(token)) o.log?.(`  | ${line}`);
  };
  shell.stdout.on('data', onData);
  shell.stderr.on('data', onData);
  const exited = new Promise<number | null>((r) => shell.on('exit', (code, signal) => r(signal ? -1 : code)));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (shell.pid) process.kill(-shell.pid, signal);
    } catch {
      // gone already
    }
  };
  const send = async (n: number, text: string) => {
    const path = join(dir, `block-${n}.sh`);
    await writeFile(path, text);
    // The marker goes to stdout after the block's output on both streams (stderr follows
    // stdout for these lines), so everything before it belongs to the block.
    shell.stdin.write(`source '${path}' </dev/null 2>&1\nprintf '\\n%s\\n' '${marker(n)}'\n`);
  };
  /** Resolves with the block's output once its marker arrived; rejects when the shell ended first. */
  const finished = (n: number, from: number) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const at = output.indexOf(marker(n), from);
        if (at >= 0) {
          clearInterval(poll);
          resolve(output.slice(from, at).replace(/\n+$/, ''));
        }
      };
      const poll = setInterval(check, 50);
      void exited.then((code) => {
        clearInterval(poll);
        if (output.indexOf(marker(n), from) < 0) reject(new Error(`failed (the shell exited with ${code})`));
        else check();
      });
    });

  const runs: BlockRun[] = [];
  try {
    for (const block of o.blocks) {
      o.log?.(`[guide] block ${block.index} (line ${block.line})`);
      const from = output.length;
      const started = performance.now();
      await send(block.index, block.text);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          killGroup('SIGTERM');
          reject(new Error(`timed out after ${o.timeoutMs / 1000} s`));
        }, o.timeoutMs);
      });
      const done = finished(block.index, from);
      done.catch(() => undefined); // a timeout may win the race; its rejection is handled there
      let text: string;
      try {
        text = await Promise.race([done, timedOut]);
      } catch (error) {
        throw new GuideBlockError(block, output.slice(from), (error as Error).message, o.file);
      } finally {
        clearTimeout(timer);
      }
      const run = { block, output: text, seconds: (performance.now() - started) / 1000 };
      runs.push(run);
      o.log?.(`[guide] block ${block.index} done in ${run.seconds.toFixed(1)} s`);
      const extra = await o.after?.(run);
      if (extra) {
        const n = -block.index;
        const at = output.length;
        await send(n, extra);
        await finished(n, at).catch((error: unknown) => {
          throw new Error(`the test's own shell text after block ${block.index} failed: ${String(error)}`);
        });
      }
    }
    return runs;
  } finally {
    shell.stdin.end();
    const gone = await Promise.race([exited, new Promise((r) => setTimeout(() => r('running'), 5000))]);
    if (gone === 'running') killGroup('SIGKILL');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
};
