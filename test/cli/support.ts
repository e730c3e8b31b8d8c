import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const TIDEWAY = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'cli', 'tideway');

/** The CLI as a user runs it: its launcher, a child process, the kubeconfig from KUBECONFIG. */
export const tideway = (env: Record<string, string>, ...args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(TIDEWAY, args, { env: { ...process.env, ...env }, timeout: 240_000 }, (error, stdout, stderr) =>
      done({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });

const run = promisify(execFile);
const unique = (lines: string) => [...new Set(lines.split('\n').filter((l) => l !== ''))].sort();

/**
 * What bash completes for each command line, the script loaded as a user does
 * (`source <(tideway completion bash)`); words split at spaces, as COMP_WORDS.
 */
export const bashCompletions = async (lines: readonly string[], env: NodeJS.ProcessEnv) => {
  const asked = lines.map((line) => {
    const words = line.split(' ');
    return `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; COMPREPLY=()
_tideway; printf '%s\\n' "\${COMPREPLY[@]}"; echo '<end>'`;
  });
  const { stdout } = await run('bash', ['-c', `source <(${TIDEWAY} completion bash)\n${asked.join('\n')}`], {
    env,
    timeout: 60_000,
  });
  return stdout.split('<end>\n').slice(0, lines.length).map(unique);
};

/**
 * Runs in the interactive zsh: records the matches completion adds (compadd's own filtering, via
 * -O) to the file $__out, then adds them as usual. Calls that only compute (-O, -A, -D) pass.
 */
const RECORDER = `PS1='<%%ready>'
bindkey -e
bindkey '^I' complete-word
compadd() {
  if (( \${@[(I)-[ODA]*]} )); then builtin compadd "$@"; return; fi
  local -a m
  builtin compadd -O m "$@"
  (( $#m )) && print -rl -- $m >> $__out
  builtin compadd "$@"
}
`;

/**
 * Drives an interactive zsh on a pseudo-terminal (zpty): runs the recorder and the setup, then
 * types each line and TAB. Each step waits for the prompt, so every key reaches the line editor
 * (typed while a command runs, the terminal would take ^U as its own kill character).
 */
const DRIVER = `zmodload zsh/zpty zsh/zselect || exit 3
recorder=$1 setup=$2 dir=$3; shift 3
zpty tw zsh -f -i || exit 3
ready() {
  local buf= chunk; integer n=0
  while [[ $buf != *'<%ready>'* ]]; do
    if zpty -rt tw chunk; then buf+=$chunk; else zselect -t 2; fi
    (( ++n > 3000 )) && { print -u2 "zsh did not come back: \${(q)buf}"; exit 4 }
  done
}
zpty -w tw "source \${(q)recorder}; $setup"
ready
integer i=0
for line in "$@"; do
  (( ++i ))
  zpty -w tw "__out=\${(q)dir}/$i; : > \\$__out"
  ready
  zpty -w -n tw "$line"$'\\t'
  zpty -w tw $'\\C-u'
  ready
done
zpty -d tw
`;

/** How the zsh script is loaded: sourced after compinit, or found by compinit in $fpath. */
export type ZshSetup = 'source' | 'fpath';

/** What zsh completes (compsys) for each command line typed, the script loaded as a user does. */
export const zshCompletions = async (lines: readonly string[], env: NodeJS.ProcessEnv, setup: ZshSetup) => {
  const dir = await mkdtemp(join(tmpdir(), 'tideway-zsh-'));
  try {
    await writeFile(join(dir, 'recorder.zsh'), RECORDER);
    await writeFile(join(dir, 'driver.zsh'), DRIVER);
    const load =
      setup === 'source'
        ? `autoload -Uz compinit && compinit -u -D && source <(${TIDEWAY} completion zsh)`
        : `${TIDEWAY} completion zsh > ${dir}/_tideway && fpath=(${dir} $fpath) && autoload -Uz compinit && compinit -u -D`;
    await run('zsh', ['-f', join(dir, 'driver.zsh'), join(dir, 'recorder.zsh'), load, dir, ...lines], {
      env,
      timeout: 120_000,
    });
    return Promise.all(lines.map(async (_, i) => unique(await readFile(join(dir, String(i + 1)), 'utf8'))));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};
