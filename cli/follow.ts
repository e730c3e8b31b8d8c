import { setTimeout as sleep } from 'node:timers/promises';
import { etaSeconds, progressLine, type Sample } from './format.ts';
import { TransientApiError } from './kube.ts';

/** What following needs of a Backup's or Restore's status. */
export type Followed = {
  phase?: string | undefined;
  progress?: { bytes?: number | undefined; percent?: number | undefined } | undefined;
};

export type FollowOptions<S extends Followed> = {
  read: () => Promise<S | undefined>;
  /** Phases after which nothing changes any more. */
  terminal: ReadonlySet<string>;
  /** A status in another phase that nothing moves on (a Restore the runtime gave up on). */
  stopped?: (s: S) => boolean;
  /** Progress goes here (stderr); undefined draws nothing (-o json). */
  out: { write(s: string): unknown; isTTY?: boolean | undefined } | undefined;
  intervalMs?: number;
  now?: () => number;
  wait?: (ms: number) => Promise<unknown>;
  /** How long reads may fail in a row before giving up. */
  patienceMs?: number;
};

/**
 * Polls the object until its phase is terminal, drawing progress: on a terminal one line redrawn
 * in place (bar, bytes, ETA), a new line per phase; elsewhere one plain line per phase and per
 * 10 % step, so logs stay short. Resolves with the last status.
 */
export const follow = async <S extends Followed>(o: FollowOptions<S>): Promise<S> => {
  const now = o.now ?? Date.now;
  const wait = o.wait ?? sleep;
  const tty = o.out?.isTTY === true;
  let samples: Sample[] = [];
  let shownPhase: string | undefined;
  let shownStep = -1;
  let failingSince: number | undefined;
  for (;;) {
    let s: S | undefined;
    try {
      s = await o.read();
      failingSince = undefined;
    } catch (e) {
      if (!(e instanceof TransientApiError)) throw e;
      failingSince ??= now();
      if (now() - failingSince > (o.patienceMs ?? 60_000)) throw e;
    }
    const phase = s?.phase ?? 'Pending';
    const percent = s?.progress?.percent;
    if (phase !== shownPhase) samples = [];
    if (percent !== undefined) samples.push({ atMs: now(), percent });
    const line = progressLine({
      phase,
      percent,
      bytes: s?.progress?.bytes,
      eta: o.terminal.has(phase) ? undefined : etaSeconds(samples),
    });
    if (o.out && s) {
      if (tty) o.out.write(`${shownPhase !== undefined && phase !== shownPhase ? '\n' : '\r\x1b[K'}${line}`);
      else {
        const step = percent === undefined ? -1 : Math.floor(percent / 10);
        if (phase !== shownPhase || step > shownStep) o.out.write(`${line.trimEnd()}\n`);
        shownStep = phase !== shownPhase ? step : Math.max(step, shownStep);
      }
      shownPhase = phase;
    }
    if (s && (o.terminal.has(phase) || o.stopped?.(s))) {
      if (tty && o.out) o.out.write('\n');
      return s;
    }
    await wait(o.intervalMs ?? 500);
  }
};
