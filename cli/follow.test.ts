import { describe, expect, it } from 'vitest';
import { CliError } from './errors.ts';
import { type Followed, follow } from './follow.ts';
import { TransientApiError } from './kube.ts';

const TERMINAL = new Set(['Completed', 'Failed']);

/** A status sequence read one per poll, a clock that moves 1 s per poll, output captured. */
const run = async (seq: (Followed | Error)[], isTTY: boolean, patienceMs?: number) => {
  let t = 0;
  let i = 0;
  let text = '';
  const last = await follow({
    read: async () => {
      const s = seq[Math.min(i++, seq.length - 1)];
      if (s instanceof Error) throw s;
      return s;
    },
    terminal: TERMINAL,
    out: { write: (s: string) => (text += s), isTTY },
    now: () => t,
    wait: async () => {
      t += 1000;
    },
    ...(patienceMs === undefined ? {} : { patienceMs }),
  });
  return { last, text, polls: i };
};

const running = (percent: number) => ({ phase: 'Running', progress: { percent, bytes: percent * 1024 } });

describe('follow', () => {
  it('plain output: one line per phase and per 10 % step, ends with the terminal status', async () => {
    const { last, text } = await run(
      [
        { phase: 'Pending' },
        running(3),
        running(5),
        running(14),
        running(18),
        running(40),
        { phase: 'Completed', progress: { percent: 100, bytes: 102400 } },
      ],
      false,
    );
    expect(last.phase).toBe('Completed');
    const lines = text.trimEnd().split('\n');
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual([
      'Pending',
      'Running',
      'Running',
      'Running',
      'Completed',
    ]);
    expect(lines[1]).toContain('  3%');
    expect(lines[2]).toContain(' 14%');
    expect(lines[2]).toContain('14.0 KiB');
    // 3 → 5 → 14 % in 2 s: 5.5 %/s over the window, 86 % left → 16 s.
    expect(lines[2]).toContain('ETA 16s');
    expect(lines[3]).toContain(' 40%');
    expect(text).not.toContain('\r');
  });

  it('on a terminal: redraws one line in place, a new line per phase, no ETA once ended', async () => {
    const { text } = await run(
      [running(10), running(20), { phase: 'Completed', progress: { percent: 100 } }],
      true,
    );
    expect(text.startsWith('\r\x1b[KRunning')).toBe(true);
    expect(text.split('\r\x1b[K').length).toBe(3);
    expect(text).toMatch(/\nCompleted .*100%\n$/);
    expect(text.split('\n').at(-2)).not.toContain('ETA');
  });

  it('draws nothing without an output (-o json)', async () => {
    let polls = 0;
    const last = await follow({
      read: async () => (++polls < 3 ? running(polls) : { phase: 'Failed', error: { reason: 'X' } }),
      terminal: TERMINAL,
      out: undefined,
      wait: async () => undefined,
    });
    expect(last).toEqual({ phase: 'Failed', error: { reason: 'X' } });
  });

  it('rides out transient read errors, but not for ever; other errors end at once', async () => {
    const blip = new TransientApiError('cannot reach the API server');
    const ok = await run([running(10), blip, blip, { phase: 'Completed' }], false);
    expect(ok.last.phase).toBe('Completed');
    await expect(run([running(10), blip], false, 5000)).rejects.toBe(blip);
    const gone = new CliError('Backup "b1" in namespace "x" not found');
    await expect(run([running(10), gone], false)).rejects.toBe(gone);
  });
});
