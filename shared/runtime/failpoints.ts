/**
 * Failpoints for fault tests (etcd's gofail, in small): `TIDEWAY_FAILPOINTS` names points in the
 * code and what happens there, e.g. `failover.before-record=stall:20000,switchover.after-swap=exit`.
 *
 * - `stall:MS` blocks the whole process for MS milliseconds (no timer, no I/O runs meanwhile),
 *   as a GC pause, a SIGSTOP or an overloaded node would: the process wakes up to a world that
 *   moved on, which is what lease checks must survive;
 * - `exit` ends the process at once (a crash at exactly that point);
 * - `error` throws, as a failed call would.
 *
 * Unset in production: a point costs one map lookup.
 */
export type FailpointAction = { kind: 'stall'; ms: number } | { kind: 'exit' } | { kind: 'error' };

export class FailpointError extends Error {
  override readonly name = 'FailpointError';
  readonly retry = true;
  readonly reason = 'Failpoint';
}

export const parseFailpoints = (spec: string | undefined): Map<string, FailpointAction> => {
  const out = new Map<string, FailpointAction>();
  for (const part of (spec ?? '').split(',')) {
    const [name, action = ''] = part.split('=').map((s) => s.trim());
    if (!name) continue;
    const [kind, arg] = action.split(':');
    if (kind === 'stall' && Number(arg) > 0) out.set(name, { kind: 'stall', ms: Number(arg) });
    else if (kind === 'exit') out.set(name, { kind: 'exit' });
    else if (kind === 'error') out.set(name, { kind: 'error' });
    else throw new Error(`TIDEWAY_FAILPOINTS: "${part}" is not name=stall:MS|exit|error`);
  }
  return out;
};

let points: Map<string, FailpointAction> | undefined;

/** Runs the action configured for `name`, if any (once per process for `stall`). */
export const failpoint = (name: string): void => {
  points ??= parseFailpoints(process.env.TIDEWAY_FAILPOINTS);
  const a = points.get(name);
  if (!a) return;
  if (a.kind === 'stall') {
    points.delete(name);
    process.stderr.write(
      `${JSON.stringify({ level: 'warn', msg: 'failpoint: stalling', point: name, ms: a.ms })}\n`,
    );
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, a.ms);
    return;
  }
  if (a.kind === 'exit') process.exit(137);
  throw new FailpointError(`failpoint ${name}`);
};
