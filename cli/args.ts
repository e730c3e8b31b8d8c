import { parseArgs } from 'node:util';
import { z } from 'zod';
import { zRestoreSpec } from '../shared/api/generated.ts';
import { UsageError } from './errors.ts';

/** An object name as the CRDs accept it (the generated schema's rule). */
const zName = zRestoreSpec.shape.cluster.shape.name;
const zOutput = z.enum(['text', 'json']);
export const OUTPUTS = zOutput.options;
export const SHELLS = ['bash', 'zsh'] as const;

export type Output = z.infer<typeof zOutput>;
export type Shell = (typeof SHELLS)[number];
type Common = { namespace: string | undefined; output: Output };
export type Command =
  | { cmd: 'help' }
  | { cmd: 'version' }
  | ({ cmd: 'status'; cluster: string } & Common)
  | ({ cmd: 'backup-now'; cluster: string; name: string | undefined; wait: boolean } & Common)
  | ({
      cmd: 'restore';
      cluster: string;
      source: { backup: { name: string } } | { latest: true };
      name: string | undefined;
      wait: boolean;
      safetyBackup: boolean;
    } & Common)
  | { cmd: 'completion'; shell: Shell };

/** Every flag the parser knows (parseArgs' definitions). */
export const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  name: { type: 'string' },
  backup: { type: 'string' },
  latest: { type: 'boolean' },
  wait: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  'no-safety-backup': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;
export type Flag = keyof typeof OPTIONS;
/** Flags every command takes. */
export const GLOBAL_FLAGS = ['help'] as const satisfies readonly Flag[];

/** One line per flag, for the completion scripts (a new flag without one does not compile). */
export const FLAG_HELP: { readonly [F in Flag]: string } = {
  namespace: "namespace (default: the kubeconfig context's)",
  output: 'text, or json: the final status as JSON, no progress',
  name: 'name of the object to create (default: generated)',
  backup: 'the Backup to restore, by name',
  latest: 'restore the newest Completed Backup of the cluster',
  wait: 'follow the object until it ends (the default)',
  'no-wait': 'return once the object exists',
  'no-safety-backup': 'skip the backup of the current data before restoring',
  help: 'show usage',
  version: "print tideway's version (alone: tideway --version)",
};

/**
 * The commands, the flags each takes and the argument it expects: the one table the parser
 * dispatches on and checks flags against, and the completion scripts are generated from.
 */
export const COMMANDS = {
  status: {
    flags: ['namespace', 'output'],
    arg: 'cluster',
    about: "a cluster's phase, master, readiness, version and conditions",
  },
  'backup now': {
    flags: ['namespace', 'output', 'name', 'wait', 'no-wait'],
    arg: 'cluster',
    about: 'back a cluster up now, following the Backup to its end',
  },
  restore: {
    flags: ['namespace', 'output', 'backup', 'latest', 'name', 'wait', 'no-wait', 'no-safety-backup'],
    arg: 'cluster',
    about: 'restore a cluster from a Backup, following the Restore to its end',
  },
  completion: { flags: [], arg: 'shell', about: 'print a shell completion script' },
  help: { flags: [], arg: undefined, about: 'show usage' },
  // `tideway --version` is this command too.
  version: { flags: ['version'], arg: undefined, about: "print tideway's version" },
} as const satisfies Record<
  string,
  { flags: readonly Flag[]; arg: 'cluster' | 'shell' | undefined; about: string }
>;
export type CommandPath = keyof typeof COMMANDS;
type FirstWord<P> = P extends `${infer W} ${string}` ? W : P;
/** The first word of each command, in the table's order (`backup` for `backup now`). */
export type Subcommand = FirstWord<CommandPath>;
export const SUBCOMMANDS = [
  ...new Set(Object.keys(COMMANDS).map((p) => p.split(' ')[0] as Subcommand)),
] as readonly Subcommand[];
const isSubcommand = (s: string): s is Subcommand => (SUBCOMMANDS as readonly string[]).includes(s);

type Values = {
  [K in Flag]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

const name = (what: string, v: string | undefined): string => {
  if (v === undefined) throw new UsageError(`missing ${what}`);
  const r = zName.safeParse(v);
  if (!r.success)
    throw new UsageError(
      `${what} "${v}" is not a valid object name (lower-case letters, digits, '-' and '.', at most 253 characters)`,
    );
  return r.data;
};

/** Only the flags a command knows; anything else is a usage error that names the flag. */
const allow = (cmd: CommandPath, v: Values) => {
  const known = new Set<string>([...COMMANDS[cmd].flags, ...GLOBAL_FLAGS]);
  for (const [k, set] of Object.entries(v))
    if (set !== undefined && !known.has(k)) throw new UsageError(`'tideway ${cmd}' has no flag --${k}`);
};

const common = (v: Values): Common => {
  const o = zOutput.safeParse(v.output ?? 'text');
  if (!o.success) throw new UsageError(`-o/--output must be json or text, not "${v.output}"`);
  if (v.namespace !== undefined) name('namespace', v.namespace);
  return { namespace: v.namespace, output: o.data };
};

const waitOf = (v: Values) => {
  if (v.wait && v['no-wait']) throw new UsageError('--wait and --no-wait exclude each other');
  return !v['no-wait'];
};

const isShell = (s: string | undefined): s is Shell =>
  (SHELLS as readonly (string | undefined)[]).includes(s);

/** argv (without node and the script) → a checked command; UsageError for anything wrong. */
export const parseCommand = (argv: readonly string[]): Command => {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values as Values;
  const [head, ...rest] = parsed.positionals;
  // As most command-line tools take it; with a command it is that command's usage error.
  if (v.version && head === undefined && !v.help) {
    allow('version', v);
    return { cmd: 'version' };
  }
  if (v.help || head === undefined) return { cmd: 'help' };
  if (!isSubcommand(head)) throw new UsageError(`unknown command "${head}"`);
  const extra = (max: number) => {
    if (rest.length > max) throw new UsageError(`unexpected argument "${rest[max]}"`);
  };
  switch (head) {
    case 'help':
      allow('help', v);
      return { cmd: 'help' };
    case 'version':
      allow('version', v);
      extra(0);
      return { cmd: 'version' };
    case 'status':
      allow('status', v);
      extra(1);
      return { cmd: 'status', cluster: name('cluster name', rest[0]), ...common(v) };
    case 'backup': {
      if (rest[0] !== 'now')
        throw new UsageError(`'tideway backup' takes 'now': tideway backup now <cluster>`);
      allow('backup now', v);
      extra(2);
      return {
        cmd: 'backup-now',
        cluster: name('cluster name', rest[1]),
        name: v.name === undefined ? undefined : name('--name', v.name),
        wait: waitOf(v),
        ...common(v),
      };
    }
    case 'restore': {
      allow('restore', v);
      extra(1);
      if ((v.backup === undefined) === !v.latest)
        throw new UsageError('restore needs exactly one of --backup NAME or --latest');
      return {
        cmd: 'restore',
        cluster: name('cluster name', rest[0]),
        source: v.backup !== undefined ? { backup: { name: name('--backup', v.backup) } } : { latest: true },
        name: v.name === undefined ? undefined : name('--name', v.name),
        wait: waitOf(v),
        safetyBackup: !v['no-safety-backup'],
        ...common(v),
      };
    }
    case 'completion':
      allow('completion', v);
      extra(1);
      if (!isShell(rest[0]))
        throw new UsageError(
          `completion supports: ${SHELLS.join(', ')} (tideway completion ${SHELLS.join('|')})`,
        );
      return { cmd: 'completion', shell: rest[0] };
    default:
      // Every first word of COMMANDS is handled above (a new one does not compile until it is).
      throw new Error(`unhandled command ${head satisfies never}`);
  }
};

export const USAGE = `tideway — status, backups and restores of Tideway's Redis clusters (also: kubectl tideway)

Usage:
  tideway status <cluster> [-n ns] [-o json]
  tideway backup now <cluster> [-n ns] [--name N] [--wait|--no-wait] [-o json]
  tideway restore <cluster> (--backup NAME | --latest) [-n ns] [--name N] [--no-safety-backup]
                  [--wait|--no-wait] [-o json]
  tideway completion bash|zsh
  tideway version

Flags:
  -n, --namespace   namespace (default: the kubeconfig context's, else "default")
  -o, --output      text (default) or json: the object's status as JSON, no progress bar
  --name            name of the Backup/Restore to create (default: generated from the cluster's)
  --wait            follow the object until it ends (default); --no-wait returns once it exists

Exit codes: 0 success, 1 failed/refused/not found, 2 bad usage.
The kubeconfig comes from KUBECONFIG or ~/.kube/config.`;
