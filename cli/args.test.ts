import { describe, expect, it } from 'vitest';
import { parseCommand } from './args.ts';
import { UsageError } from './errors.ts';

const usage = (argv: string[]) => {
  try {
    parseCommand(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    expect((e as UsageError).exitCode).toBe(2);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('parseCommand', () => {
  it('status with namespace and output, short and long', () => {
    expect(parseCommand(['status', 'cache', '-n', 'demo', '-o', 'json'])).toEqual({
      cmd: 'status',
      cluster: 'cache',
      namespace: 'demo',
      output: 'json',
    });
    expect(parseCommand(['status', '--namespace=demo', 'cache'])).toEqual({
      cmd: 'status',
      cluster: 'cache',
      namespace: 'demo',
      output: 'text',
    });
  });

  it('backup now waits by default; --no-wait returns at once; both at once is an error', () => {
    expect(parseCommand(['backup', 'now', 'cache'])).toMatchObject({
      cmd: 'backup-now',
      wait: true,
      name: undefined,
    });
    expect(parseCommand(['backup', 'now', 'cache', '--no-wait', '--name', 'b1'])).toMatchObject({
      wait: false,
      name: 'b1',
    });
    expect(parseCommand(['backup', 'now', 'cache', '--wait'])).toMatchObject({ wait: true });
    expect(usage(['backup', 'now', 'cache', '--wait', '--no-wait'])).toContain('exclude each other');
  });

  it('restore needs exactly one source', () => {
    expect(parseCommand(['restore', 'cache', '--backup', 'b1'])).toMatchObject({
      cmd: 'restore',
      source: { backup: { name: 'b1' } },
      safetyBackup: true,
    });
    expect(parseCommand(['restore', 'cache', '--latest', '--no-safety-backup'])).toMatchObject({
      source: { latest: true },
      safetyBackup: false,
    });
    expect(usage(['restore', 'cache'])).toContain('exactly one of --backup NAME or --latest');
    expect(usage(['restore', 'cache', '--latest', '--backup', 'b1'])).toContain('exactly one');
  });

  it('refuses what it does not know, naming it', () => {
    expect(usage(['status'])).toContain('missing cluster name');
    expect(usage(['status', 'Cache_1'])).toContain('"Cache_1" is not a valid object name');
    expect(usage(['status', 'cache', '--latest'])).toContain("'tideway status' has no flag --latest");
    expect(usage(['status', 'cache', '-o', 'yaml'])).toContain('must be json or text, not "yaml"');
    expect(usage(['status', 'cache', 'extra'])).toContain('unexpected argument "extra"');
    expect(usage(['backup', 'cache'])).toContain("'tideway backup' takes 'now'");
    expect(usage(['frobnicate'])).toContain('unknown command "frobnicate"');
    expect(usage(['status', 'cache', '--bogus'])).toContain('--bogus');
    expect(usage(['completion', 'zsh'])).toContain('bash');
    expect(usage(['backup', 'now', 'cache', '-n', 'Bad NS'])).toContain('namespace "Bad NS"');
  });

  it('help and completion', () => {
    expect(parseCommand([])).toEqual({ cmd: 'help' });
    expect(parseCommand(['status', '--help'])).toEqual({ cmd: 'help' });
    expect(parseCommand(['completion', 'bash'])).toEqual({ cmd: 'completion', shell: 'bash' });
  });
});
