import { FLAGS, SUBCOMMANDS } from '../args.ts';

/**
 * A bash completion script for `tideway` and `kubectl-tideway`: subcommands, then the flags of
 * the one typed (from args.ts, the list the parser uses), and cluster names from kubectl.
 */
export const bashCompletion = (): string => {
  const cases = Object.entries(FLAGS)
    .map(([cmd, flags]) => `    "${cmd}") flags="${flags.join(' ')} -n -o" ;;`)
    .join('\n');
  return `# tideway bash completion: source <(tideway completion bash)
_tideway() {
  local cur prev words cword
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="\${COMP_WORDS[1]}"
  if [ "$cmd" = backup ]; then cmd="backup now"; fi
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${SUBCOMMANDS.join(' ')}" -- "$cur") ); return
  fi
  if [ "\${COMP_WORDS[1]}" = backup ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=( $(compgen -W "now" -- "$cur") ); return
  fi
  if [ "\${COMP_WORDS[1]}" = completion ]; then
    COMPREPLY=( $(compgen -W "bash" -- "$cur") ); return
  fi
  case "$prev" in
    -o|--output) COMPREPLY=( $(compgen -W "text json" -- "$cur") ); return ;;
    -n|--namespace) COMPREPLY=( $(compgen -W "$(kubectl get namespaces -o name 2>/dev/null | sed 's|.*/||')" -- "$cur") ); return ;;
    --backup) COMPREPLY=( $(compgen -W "$(kubectl get backups.tideway.dev -o name 2>/dev/null | sed 's|.*/||')" -- "$cur") ); return ;;
  esac
  local flags=""
  case "$cmd" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  else
    COMPREPLY=( $(compgen -W "$(kubectl get redisclusters.tideway.dev -o name 2>/dev/null | sed 's|.*/||')" -- "$cur") )
  fi
}
complete -F _tideway tideway kubectl-tideway
`;
};
