/** Where a command writes: results on stdout, progress and errors on stderr. */
export type Io = {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean | undefined };
};
