import { parseArgs } from 'node:util';
import { z } from 'zod';
import { zRestoreSpec } from '../shared/api/generated.ts';
import { UsageError } from './errors.ts';

/** An object name as the CRDs accept it (the generated schema's rule). */
const zName = zRestoreSpec.shape.cluster.shape.name;
const zOutput = z.enum(['text', 'json']);

export type Output = z.infer<typeof zOutput>;
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
  | { cmd: 'completion'; shell: 'bash' };

/** Flags of each command, for parsing and for the completion script (one list). */
export const FLAGS = {
  status: ['--namespace', '--output'],
  'backup now': ['--namespace', '--output', '--name', '--wait', '--no-wait'],
  restore: [
    '--namespace',
    '--output',
    '--backup',
    '--latest',
    '--name',
    '--wait',
    '--no-wait',
    '--no-safety-backup',
  ],
  completion: [],
} as const;
export const SUBCOMMANDS = ['status', 'backup', 'restore', 'completion', 'help', 'version'] as const;

const options = {
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  name: { type: 'string' },
  backup: { type: 'string' },
  latest: { type: 'boolean' },
  wait: { type: 'boolean' },
  'no-wait': { type: 'boolean' },
  'no-safety-backup': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;
type Values = {
  [K in keyof typeof options]?: (typeof options)[K]['type'] extends 'string' ? string : boolean;
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
const allow = (cmd: keyof typeof FLAGS, v: Values) => {
  const known = new Set<string>(FLAGS[cmd]);
  for (const [k, set] of Object.entries(v))
    if (set !== undefined && k !== 'help' && !known.has(`--${k}`))
      throw new UsageError(`'tideway ${cmd}' has no flag --${k}`);
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

/** argv (without node and the script) → a checked command; UsageError for anything wrong. */
export const parseCommand = (argv: readonly string[]): Command => {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values as Values;
  const [head, ...rest] = parsed.positionals;
  if (v.help || head === undefined || head === 'help') return { cmd: 'help' };
  const extra = (max: number) => {
    if (rest.length > max) throw new UsageError(`unexpected argument "${rest[max]}"`);
  };
  switch (head) {
    case 'version':
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
      if (rest[0] !== 'bash') throw new UsageError('completion supports: bash (tideway completion bash)');
      return { cmd: 'completion', shell: 'bash' };
    default:
      throw new UsageError(`unknown command "${head}"`);
  }
};

export const USAGE = `tideway — status, backups and restores of Tideway's Redis clusters (also: kubectl tideway)

Usage:
  tideway status <cluster> [-n ns] [-o json]
  tideway backup now <cluster> [-n ns] [--name N] [--wait|--no-wait] [-o json]
  tideway restore <cluster> (--backup NAME | --latest) [-n ns] [--name N] [--no-safety-backup]
                  [--wait|--no-wait] [-o json]
  tideway completion bash
  tideway version

Flags:
  -n, --namespace   namespace (default: the kubeconfig context's, else "default")
  -o, --output      text (default) or json: the object's status as JSON, no progress bar
  --name            name of the Backup/Restore to create (default: generated from the cluster's)
  --wait            follow the object until it ends (default); --no-wait returns once it exists

Exit codes: 0 success, 1 failed/refused/not found, 2 bad usage.
The kubeconfig comes from KUBECONFIG or ~/.kube/config.`;
