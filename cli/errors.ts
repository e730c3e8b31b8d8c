/** Exit codes: 0 done, 1 failed or refused (the outcome or the API said no), 2 bad usage. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one line on stderr and an exit code; never a stack trace. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: ExitCode;
  constructor(message: string, exitCode: ExitCode = EXIT.failed, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
  }
}

/** Bad arguments: the message plus a pointer to help. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(`${message}\nRun 'tideway --help' for usage.`, EXIT.usage);
  }
}
