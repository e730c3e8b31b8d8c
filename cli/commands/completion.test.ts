import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  COMMANDS,
  type CommandPath,
  type Flag,
  GLOBAL_FLAGS,
  OPTIONS,
  SHELLS,
  SUBCOMMANDS,
} from '../args.ts';
import { bashCompletion, zshCompletion } from './completion.ts';

/** Completions bash offers for a command line (the script sourced in a real bash, kubectl absent). */
const complete = (line: string) => {
  const words = line.split(' ');
  const script = `${bashCompletion()}
PATH=/nonexistent
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_tideway; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8' })
    .split('\n')
    .filter((x) => x !== '');
};

// What the parser takes (args.test.ts proves COMMANDS is that), spelled as on a command line.
const PATHS = Object.keys(COMMANDS) as CommandPath[];
const spellings = (f: Flag) => [`--${f}`, ...('short' in OPTIONS[f] ? [`-${OPTIONS[f].short}`] : [])];
const flagsOf = (p: CommandPath) => [...COMMANDS[p].flags, ...GLOBAL_FLAGS].flatMap(spellings).sort();
const secondWordsOf = (w: string) =>
  PATHS.filter((p) => p.startsWith(`${w} `)).map((p) => p.slice(w.length + 1));

describe('bash completion', () => {
  it('subcommands, then `now`, then the flags of the command typed', () => {
    expect(complete('tideway ')).toEqual(['status', 'backup', 'restore', 'completion', 'help', 'version']);
    expect(complete('tideway re')).toEqual(['restore']);
    expect(complete('tideway backup ')).toEqual(['now']);
    expect(complete('tideway backup now cache --n')).toEqual(['--namespace', '--name', '--no-wait']);
    expect(complete('tideway restore cache --')).toContain('--latest');
    expect(complete('tideway status cache --')).not.toContain('--latest');
    expect(complete('tideway status cache -o ')).toEqual(['text', 'json']);
    expect(complete('tideway completion ')).toEqual(['bash', 'zsh']);
    // --flag=value: bash splits the word at '='.
    expect(complete('tideway status cache --output = j')).toEqual(['json']);
  });

  it('finds the command after flags that come first, and their values', () => {
    expect(complete('tideway -n demo ')).toEqual([...SUBCOMMANDS]);
    expect(complete('tideway -n ')).toEqual([]); // a namespace (kubectl is absent here)
    expect(complete('tideway -ndemo backup ')).toEqual(['now']);
    expect(complete('tideway --namespace = demo -o json backup ')).toEqual(['now']);
    expect(complete('tideway -n demo restore cache --l')).toEqual(['--latest']);
    expect(complete('tideway -o json status cache --')).not.toContain('--latest');
    expect(complete('tideway -n demo completion ')).toEqual([...SHELLS]);
  });

  it('offers every command and, for each, exactly the flags the parser takes', () => {
    expect(complete('tideway ')).toEqual([...SUBCOMMANDS]);
    for (const w of SUBCOMMANDS) {
      const seconds = secondWordsOf(w);
      if (seconds.length > 0) expect(complete(`tideway ${w} `), w).toEqual(seconds);
    }
    for (const p of PATHS) {
      expect(complete(`tideway ${p}${COMMANDS[p].arg ? ' x' : ''} -`).sort(), p).toEqual(flagsOf(p));
      if (COMMANDS[p].arg === 'shell') expect(complete(`tideway ${p} `)).toEqual([...SHELLS]);
    }
  });

  it('names from kubectl in the namespace given, also as -nNAME, never waiting on the API server for long', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tideway-completion-'));
    try {
      // A kubectl that answers with the arguments it was given, as one name.
      writeFileSync(join(dir, 'kubectl'), '#!/bin/sh\necho "x/$(echo "$@" | tr " " "+")"\n', { mode: 0o755 });
      const names = (line: string) => {
        const words = line.split(' ');
        const script = `${bashCompletion()}
PATH=${dir}:/usr/bin:/bin
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_tideway; printf '%s\\n' "\${COMPREPLY[@]}"`;
        return execFileSync('bash', ['-c', script], { encoding: 'utf8' }).trim();
      };
      for (const line of [
        'tideway status -n demo ',
        'tideway status -ndemo ',
        'tideway status --namespace = demo ',
        'tideway -n demo status ',
      ])
        expect(names(line), line).toMatch(/\+-n\+demo\+-o\+name\+--request-timeout=5s$/);
      expect(names('tideway status ')).toMatch(/^get\+redisclusters[^+]*\+-o\+name\+--request-timeout=5s$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is valid bash (bash -n)', () => {
    expect(() => execFileSync('bash', ['-n'], { input: bashCompletion() })).not.toThrow();
  });
});

describe('zsh completion script', () => {
  const script = zshCompletion();
  /** The `_arguments` specs of one command's case. */
  const caseOf = (p: CommandPath) => {
    const start = script.indexOf(`    '${p}') _arguments \\\n`);
    expect(start, `no case for '${p}'`).toBeGreaterThan(-1);
    return script.slice(start, script.indexOf(';;', start));
  };
  const described = (name: string) =>
    [
      ...(new RegExp(`local -a ${name}=\\( (.*) \\)`).exec(script)?.[1] ?? '').matchAll(
        /(?:^| )'([a-z-]+):/g,
      ),
    ].map((m) => m[1]);

  it('is valid zsh (zsh -n), and finds the command after flags and their values', () => {
    // zsh is not part of the project's toolchain: the syntax check runs where it is installed.
    const zsh = ['/usr/bin/zsh', '/bin/zsh'].find((z) => existsSync(z));
    if (zsh) expect(() => execFileSync(zsh, ['-n'], { input: script })).not.toThrow();
    expect(script).toContain('(--namespace|-n|--output|-o|--name|--backup) (( ci += 2 )) ;;');
  });

  it('registers itself for tideway and kubectl-tideway, sourced (compdef) or from $fpath (#compdef)', () => {
    expect(script.startsWith('#compdef tideway kubectl-tideway\n')).toBe(true);
    expect(script).toContain('compdef _tideway tideway kubectl-tideway');
  });

  it('lists every command and, for each, exactly the flags the parser takes, and its argument', () => {
    expect(described('commands')).toEqual([...SUBCOMMANDS]);
    for (const w of SUBCOMMANDS)
      if (secondWordsOf(w).length > 0) expect(described('subcommands')).toEqual(secondWordsOf(w));
    for (const p of PATHS) {
      const specs = caseOf(p);
      const flags = [...specs.matchAll(/'(?:\([^)]*\))?(--?[a-z][a-z-]*)[+=]?\[/g)].map((m) => m[1]);
      expect(flags.sort(), p).toEqual(flagsOf(p));
      // A flag that takes a value says what completes it; one that does not, takes none.
      for (const f of [...COMMANDS[p].flags, ...GLOBAL_FLAGS] as Flag[])
        for (const s of spellings(f)) {
          const spec = new RegExp(`'(?:\\([^)]*\\))?${s}([+=]?)\\[[^\\]]*\\](:[^']*)?'`).exec(specs);
          expect(spec, `${p} ${s}`).not.toBeNull();
          expect(Boolean(spec?.[2]), `${p} ${s} takes a value`).toBe(OPTIONS[f].type === 'string');
        }
      const arg = COMMANDS[p].arg;
      expect(specs.includes(`':${arg}:`), `${p} completes its ${arg ?? 'no'} argument`).toBe(
        arg !== undefined,
      );
    }
  });
});
