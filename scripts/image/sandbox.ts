import type { ImageConfig } from '../../infra/testbed/image-table/image-config.ts';
import { type RunResult, run } from './exec.ts';

/** `uid[:gid]` of an image config (numeric only: there is no passwd lookup without a runtime). */
export const userOf = (user: string | undefined): { uid: number; gid: number } => {
  const m = /^(\d+)(?::(\d+))?$/.exec(user ?? '0');
  if (!m?.[1]) throw new Error(`image user ${user}: not numeric (uid or uid:gid)`);
  return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
};

/** What runtimes set when an image names no PATH. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// In a private mount namespace: the root bound onto itself read-only, /proc and /dev inside it,
// then nsenter enters it as the user, in the working directory. Nothing of this outlives the
// command (the namespace dies with it).
const SCRIPT = `set -e
root=$1 uid=$2 gid=$3 wd=$4; shift 4
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -o remount,bind,ro "$root"
nsenter=$(command -v nsenter)
export PATH="$IMAGE_PATH"
unset IMAGE_PATH
exec "$nsenter" --root="$root" --wd="$root$wd" --setuid="$uid" --setgid="$gid" -- "$@"`;

/**
 * Runs a command in an unpacked image as a runtime would start it: the config's user, working
 * directory and environment (and only those), on a read-only root, no network change. Needs root
 * (mount namespaces). The command is `argv`, as given (say, the config's Entrypoint + args).
 */
export const runInImage = (o: {
  root: string;
  config: Pick<ImageConfig, 'user' | 'env' | 'workingDir'>;
  argv: readonly string[];
  /** Added to the config's environment, as a pod's `env` is. */
  env?: Record<string, string>;
  /** Overrides the config's user, e.g. 0 to show a write fails for lack of a writable root. */
  user?: string;
}): Promise<RunResult> => {
  const { uid, gid } = userOf(o.user ?? (o.config.user || undefined));
  const env: Record<string, string> = {
    ...Object.fromEntries(o.config.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])),
    ...o.env,
  };
  return run(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      SCRIPT,
      'sandbox',
      o.root,
      String(uid),
      String(gid),
      o.config.workingDir || '/',
      ...o.argv,
    ],
    // The image's environment only; the host's PATH just long enough to find mount and nsenter.
    {
      env: { ...env, IMAGE_PATH: env.PATH ?? DEFAULT_PATH, PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      okCodes: Array.from({ length: 255 }, (_, i) => i + 1),
    },
  );
};
