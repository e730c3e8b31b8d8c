import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { bashCompletion } from './completion.ts';

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

describe('bash completion', () => {
  it('subcommands, then `now`, then the flags of the command typed', () => {
    expect(complete('tideway ')).toEqual(['status', 'backup', 'restore', 'completion', 'help', 'version']);
    expect(complete('tideway re')).toEqual(['restore']);
    expect(complete('tideway backup ')).toEqual(['now']);
    expect(complete('tideway backup now cache --n')).toEqual(['--namespace', '--name', '--no-wait']);
    expect(complete('tideway restore cache --')).toContain('--latest');
    expect(complete('tideway status cache --')).not.toContain('--latest');
    expect(complete('tideway status cache -o ')).toEqual(['text', 'json']);
  });
});
