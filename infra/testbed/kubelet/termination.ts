import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** kubelet's limits: a message file is read up to 4 KiB; a log fallback is its last 80 lines, at most 2 KiB. */
const FILE_LIMIT = 4096;
const LOG_BYTES = 2048;
const LOG_LINES = 80;

/** Up to `limit` bytes of a file from offset `start`; '' when it is missing. */
const readPart = (path: string, start: number, limit: number): string => {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(limit);
    const n = readSync(fd, buf, 0, limit, start);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
};

/**
 * A terminated container's message, as kubelet reports it: what the container wrote to its
 * terminationMessagePath; with FallbackToLogsOnError, when that is empty and the container
 * failed, the end of this run's log.
 */
export const terminationMessage = (o: {
  file: string | undefined;
  log: string;
  /** Where this run's output starts in the log (earlier runs of the container are above it). */
  logStart: number;
  policy: string | undefined;
  exitCode: number;
}): string => {
  const written = o.file ? readPart(o.file, 0, FILE_LIMIT) : '';
  if (written !== '' || o.policy !== 'FallbackToLogsOnError' || o.exitCode === 0) return written;
  const size = statSync(o.log, { throwIfNoEntry: false })?.size ?? 0;
  // Never a line of an earlier run of the container.
  const tail = readPart(o.log, Math.max(o.logStart, size - LOG_BYTES), LOG_BYTES);
  return tail
    .split('\n')
    .slice(-LOG_LINES - 1)
    .join('\n');
};
