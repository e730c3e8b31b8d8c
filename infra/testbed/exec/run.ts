import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A host command of the test bed failed; the message carries the command and its stderr. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  readonly retry = false;
  readonly stderr: string;

  constructor(command: string, stderr: string, options?: ErrorOptions) {
    super(`${command} failed: ${stderr.trim() || 'no output'}`, options);
    this.stderr = stderr;
  }
}

/** Runs a command to completion and returns its stdout; throws CommandError on non-zero exit. */
export const run = async (command: string, args: readonly string[], opts: { input?: string } = {}) => {
  try {
    const child = execFileAsync(command, args, { maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' });
    if (opts.input !== undefined) {
      child.child.stdin?.end(opts.input);
    }
    const { stdout } = await child;
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new CommandError([command, ...args].join(' '), stderr, { cause: error });
  }
};
