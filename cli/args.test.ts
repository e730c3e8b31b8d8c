import { describe, expect, it } from 'vitest';
import { COMMANDS, type CommandPath, GLOBAL_FLAGS, OPTIONS, parseCommand, SUBCOMMANDS } from './args.ts';
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
    expect(usage(['completion', 'fish'])).toContain('completion supports: bash, zsh');
    expect(usage(['version', '-n', 'demo'])).toContain("'tideway version' has no flag --namespace");
    expect(parseCommand(['--version'])).toEqual({ cmd: 'version' });
    expect(usage(['--version', '-n', 'demo'])).toContain("'tideway version' has no flag --namespace");
    expect(usage(['status', 'c', '--version'])).toContain("'tideway status' has no flag --version");
    expect(usage(['backup', 'now', 'cache', '-n', 'Bad NS'])).toContain('namespace "Bad NS"');
  });

  it('help and completion', () => {
    expect(parseCommand([])).toEqual({ cmd: 'help' });
    expect(parseCommand(['status', '--help'])).toEqual({ cmd: 'help' });
    expect(parseCommand(['completion', 'bash'])).toEqual({ cmd: 'completion', shell: 'bash' });
    expect(parseCommand(['completion', 'zsh'])).toEqual({ cmd: 'completion', shell: 'zsh' });
  });

  // The completion scripts are generated from COMMANDS; this proves COMMANDS is what the parser
  // takes: every command in it parses, and each accepts exactly the flags it lists.
  it('COMMANDS is what the parser accepts: each command, and exactly its flags', () => {
    const argsOf = (p: CommandPath) => [
      ...p.split(' '),
      ...(COMMANDS[p].arg === 'cluster' ? ['cache'] : COMMANDS[p].arg === 'shell' ? ['zsh'] : []),
    ];
    /** The refusal of a flag, if the parser refuses it (other complaints, e.g. a missing --latest, are not). */
    const flagRefusal = (argv: string[]) => {
      try {
        parseCommand(argv);
        return undefined;
      } catch (e) {
        expect(e).toBeInstanceOf(UsageError);
        expect((e as Error).message).not.toContain('unknown command');
        return /has no flag|Unknown option/.test((e as Error).message) ? (e as Error).message : undefined;
      }
    };
    const paths = Object.keys(COMMANDS) as CommandPath[];
    expect(new Set(paths.map((p) => p.split(' ')[0]))).toEqual(new Set(SUBCOMMANDS));
    for (const p of paths) {
      expect(flagRefusal(argsOf(p)), p).toBeUndefined();
      const takes = new Set<string>([...COMMANDS[p].flags, ...GLOBAL_FLAGS]);
      for (const [flag, def] of Object.entries(OPTIONS)) {
        const argv = [...argsOf(p), `--${flag}`, ...(def.type === 'string' ? ['json'] : [])];
        if (takes.has(flag)) expect(flagRefusal(argv), `${p} --${flag}`).toBeUndefined();
        else expect(flagRefusal(argv), `${p} --${flag}`).toContain(`'tideway ${p}' has no flag --${flag}`);
      }
    }
    // Every flag the parser defines belongs to some command.
    const used = new Set<string>([...Object.values(COMMANDS).flatMap((c) => c.flags), ...GLOBAL_FLAGS]);
    expect(Object.keys(OPTIONS).filter((f) => !used.has(f))).toEqual([]);
  });
});
