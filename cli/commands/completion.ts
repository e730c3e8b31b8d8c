import {
  COMMANDS,
  type CommandPath,
  FLAG_HELP,
  type Flag,
  GLOBAL_FLAGS,
  OPTIONS,
  OUTPUTS,
  SHELLS,
  type Shell,
  SUBCOMMANDS,
} from '../args.ts';

// Both scripts are generated from args.ts (COMMANDS, OPTIONS): the lists the parser uses.

/** Flags that take a value, and what to offer for it. */
type ValueFlag = { [F in Flag]: (typeof OPTIONS)[F]['type'] extends 'string' ? F : never }[Flag];
type Values = { words: readonly string[] } | { kube: string } | 'free';
/** Every value flag must say what completes its value (a new one does not compile without). */
const VALUES: { readonly [F in ValueFlag]: Values } = {
  namespace: { kube: 'namespaces' },
  output: { words: OUTPUTS },
  name: 'free',
  backup: { kube: 'backups.tideway.dev' },
};
const ARGS = { cluster: 'redisclusters.tideway.dev', shell: SHELLS } as const;

const flagsOf = (path: CommandPath): Flag[] => [...COMMANDS[path].flags, ...GLOBAL_FLAGS];
const shortOf = (f: Flag): string | undefined => (OPTIONS[f] as { readonly short?: string }).short;
const isValueFlag = (f: Flag): f is ValueFlag => OPTIONS[f].type === 'string';
/** The command paths under each first word that has more than one (`backup` → `now`). */
const secondWords = SUBCOMMANDS.flatMap((w) => {
  const rest = Object.keys(COMMANDS)
    .filter((p) => p.startsWith(`${w} `))
    .map((p) => p.slice(w.length + 1));
  return rest.length > 0 ? [[w, rest] as const] : [];
});
/** Every spelling of a flag that takes its value as the next word. */
const valueSpellings = (Object.keys(OPTIONS) as Flag[])
  .filter(isValueFlag)
  .flatMap((f) => [`--${f}`, ...(shortOf(f) ? [`-${shortOf(f)}`] : [])]);
/** Single-quoted for either shell. */
const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * A bash completion script for `tideway` and `kubectl-tideway`: subcommands, then the flags of
 * the one typed, flag values, and cluster and backup names from kubectl in the namespace given.
 */
export const bashCompletion = (): string => {
  const spellings = (f: Flag) => [`--${f}`, ...(shortOf(f) ? [`-${shortOf(f)}`] : [])];
  const values = Object.entries(VALUES as Record<ValueFlag, Values>).map(([f, v]) => {
    const reply =
      v === 'free'
        ? 'return'
        : 'words' in v
          ? `COMPREPLY=( $(compgen -W "${v.words.join(' ')}" -- "$cur") ); return`
          : `COMPREPLY=( $(compgen -W "$(__tideway_kube ${v.kube})" -- "$cur") ); return`;
    return `    ${spellings(f as Flag).join('|')}) ${reply} ;;`;
  });
  const seconds = secondWords.map(
    ([w, rest]) => `    ${w})
      if [ "$COMP_CWORD" -eq $((ci + 1)) ]; then COMPREPLY=( $(compgen -W "${rest.join(' ')}" -- "$cur") ); return; fi
      cmd="$cmd \${COMP_WORDS[ci + 1]}" ;;`,
  );
  const cases = (Object.keys(COMMANDS) as CommandPath[]).map(
    (p) =>
      `    "${p}") flags="${flagsOf(p).flatMap(spellings).join(' ')}"; arg="${COMMANDS[p].arg ?? ''}" ;;`,
  );
  return `# tideway bash completion: source <(tideway completion bash)
# Names of a kind from kubectl, in the namespace given on the line (-n/--namespace) if any.
__tideway_kube() {
  local ns="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [ "$w" = -n ] || [ "$w" = --namespace ]; then
      ns="\${COMP_WORDS[i+1]}"
      if [ "$ns" = "=" ]; then ns="\${COMP_WORDS[i+2]}"; fi
    elif [[ "$w" == -n?* ]]; then
      ns="\${w#-n}"
    fi
  done
  # A TAB never hangs on an API server that does not answer.
  kubectl get "$1" \${ns:+-n "$ns"} -o name --request-timeout=5s 2>/dev/null | sed 's|.*/||'
}
_tideway() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # --flag=value: bash splits at '=' (COMP_WORDBREAKS).
  if [ "$cur" = "=" ]; then cur=""; fi
  if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then prev="\${COMP_WORDS[COMP_CWORD-2]}"; fi
  # The command is the first word that is neither a flag nor a flag's value (tideway -n demo status).
  local ci=0 i=1
  while [ "$i" -lt "$COMP_CWORD" ]; do
    case "\${COMP_WORDS[i]}" in
      ${valueSpellings.join('|')})
        i=$((i + 1))
        if [ "\${COMP_WORDS[i]}" = "=" ]; then i=$((i + 1)); fi ;;
      -*) ;;
      *) ci=$i; break ;;
    esac
    i=$((i + 1))
  done
  case "$prev" in
${values.join('\n')}
  esac
  if [ "$ci" -eq 0 ]; then
    COMPREPLY=( $(compgen -W "${SUBCOMMANDS.join(' ')}" -- "$cur") ); return
  fi
  local cmd="\${COMP_WORDS[ci]}" flags="" arg=""
  case "$cmd" in
${seconds.join('\n')}
  esac
  case "$cmd" in
${cases.join('\n')}
    *) return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  elif [ "$arg" = cluster ]; then
    COMPREPLY=( $(compgen -W "$(__tideway_kube ${ARGS.cluster})" -- "$cur") )
  elif [ "$arg" = shell ]; then
    COMPREPLY=( $(compgen -W "${ARGS.shell.join(' ')}" -- "$cur") )
  fi
}
complete -F _tideway tideway kubectl-tideway
`;
};

/** `_arguments` specs of one flag: each spelling, excluding the others, with its value's action. */
const zshFlagSpecs = (f: Flag): string[] => {
  const short = shortOf(f);
  const help = `[${FLAG_HELP[f].replaceAll(/([\\\]:])/g, '\\$1')}]`;
  let value = '';
  if (isValueFlag(f)) {
    const v = VALUES[f];
    const action = v === 'free' ? ' ' : 'words' in v ? `(${v.words.join(' ')})` : `__tideway_kube ${v.kube}`;
    value = `:${f}:${action}`;
  }
  const exclude = short ? `(-${short} --${f})` : '';
  return [
    ...(short ? [`${exclude}-${short}${isValueFlag(f) ? '+' : ''}${help}${value}`] : []),
    `${exclude}--${f}${isValueFlag(f) ? '=' : ''}${help}${value}`,
  ].map(q);
};

/**
 * A zsh completion script (compsys) for `tideway` and `kubectl-tideway`: the same commands, flags
 * and names as bash's, with descriptions. Sourced after compinit it registers itself (compdef);
 * saved as `_tideway` in a directory of $fpath, compinit finds it by its #compdef line.
 */
export const zshCompletion = (): string => {
  const aboutOf = (w: string) =>
    COMMANDS[(Object.keys(COMMANDS) as CommandPath[]).find((p) => p.split(' ')[0] === w) ?? 'help'].about;
  const described = (pairs: readonly (readonly [string, string])[]) =>
    pairs.map(([w, about]) => q(`${w}:${about}`)).join(' ');
  const seconds = secondWords.map(
    ([w, rest]) => `    ${w})
      if (( CURRENT == ci + 1 )); then
        local -a subcommands=( ${described(rest.map((r) => [r, COMMANDS[`${w} ${r}` as CommandPath].about]))} )
        _describe -t commands ${q(`tideway ${w} command`)} subcommands; return
      fi
      cmd="$cmd $words[ci + 1]"; skip=$(( ci + 1 )) ;;`,
  );
  const argSpec = {
    cluster: `':cluster:__tideway_kube ${ARGS.cluster}'`,
    shell: `':shell:(${ARGS.shell.join(' ')})'`,
  };
  const cases = (Object.keys(COMMANDS) as CommandPath[]).map((p) => {
    const arg = COMMANDS[p].arg;
    const specs = [...flagsOf(p).flatMap(zshFlagSpecs), ...(arg ? [argSpec[arg]] : [])];
    return `    ${q(p)}) _arguments \\\n        ${specs.join(' \\\n        ')} ;;`;
  });
  return `#compdef tideway kubectl-tideway
# tideway zsh completion: source <(tideway completion zsh) after compinit, or save it as _tideway
# in a directory of $fpath.

# Names of a kind from kubectl, in the namespace given on the line (-n/--namespace) if any.
# _arguments calls it with compadd's options (group, description) first; the kind is last.
__tideway_kube() {
  local kind=\${@[-1]} ns=\${opt_args[-n]:-\${opt_args[--namespace]}}
  local -a names nsflag
  [[ -n $ns ]] && nsflag=(-n "$ns")
  names=( \${\${(f)"$(kubectl get $kind $nsflag -o name 2>/dev/null)"}##*/} )
  compadd "\${@[1,-2]}" -a names
}

_tideway() {
  local -a commands=( ${described(SUBCOMMANDS.map((w) => [w, aboutOf(w)]))} )
  # The command is the first word that is neither a flag nor a flag's value (tideway -n demo status).
  local -i ci=2
  while (( ci < CURRENT )); do
    case $words[ci] in
      (${valueSpellings.join('|')}) (( ci += 2 )) ;;
      (-*) (( ci += 1 )) ;;
      (*) break ;;
    esac
  done
  if (( ci >= CURRENT )); then
    _describe -t commands 'tideway command' commands; return
  fi
  local cmd=$words[ci]
  local -i skip=ci
  case $cmd in
${seconds.join('\n')}
  esac
  # _arguments sees the command's own words, its name first.
  words=( "\${(@)words[skip,-1]}" )
  (( CURRENT -= skip - 1 ))
  case $cmd in
${cases.join('\n')}
  esac
}

if [[ $funcstack[1] == _tideway ]]; then
  _tideway "$@"
else
  compdef _tideway tideway kubectl-tideway
fi
`;
};

export const completionScript = (shell: Shell): string =>
  shell === 'zsh' ? zshCompletion() : bashCompletion();
