import { spawn } from 'node:child_process';

export type Log = (line: string) => void;

/** A command the image build runs failed; says what ran and what it printed. */
export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
  /** A failed download may succeed later; a failed build of the same inputs will not. */
  readonly retry: boolean;
  readonly output: string;
  constructor(command: string, code: number | null, output: string, retry = false) {
    super(
      `${command} exited with ${code}${output.trim() ? `:\n${output.trim().split('\n').slice(-20).join('\n')}` : ''}`,
    );
    this.output = output;
    this.retry = retry;
  }
}

export type RunOptions = {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Each output line as it comes (long builds show progress); without it output is only kept. */
  log?: Log;
  /** Exit codes that are not failures (the caller reads the result). */
  okCodes?: readonly number[];
  retry?: boolean;
};

export type RunResult = { code: number; stdout: string; stderr: string };

/** Runs a program (no shell) to its end; throws CommandFailed unless its exit code is acceptable. */
export const run = (command: string, args: readonly string[], o: RunOptions = {}): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: o.cwd,
      env: o.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const forward = (sink: Buffer[]) => (chunk: Buffer) => {
      sink.push(chunk);
      if (o.log) for (const line of chunk.toString().split('\n')) if (line.trim()) o.log(line);
    };
    child.stdout.on('data', forward(out));
    child.stderr.on('data', forward(err));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString();
      const stderr = Buffer.concat(err).toString();
      if (code !== null && (code === 0 || o.okCodes?.includes(code))) resolve({ code, stdout, stderr });
      else
        reject(
          new CommandFailed([command, ...args].join(' '), code, `${stderr}\n${stdout}`, o.retry ?? false),
        );
    });
  });
