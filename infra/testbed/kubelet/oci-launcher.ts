import type { RunAs } from './user.ts';

/** A bind mount into the container, its target already resolved inside the root (see resolveInRoot). */
export type PlacedMount = {
  readonly source: string;
  /** Normalized absolute container path; no existing component of it is a symlink. */
  readonly target: string;
  readonly kind: 'dir' | 'file';
  readonly readOnly: boolean;
};

export type OciLaunch = {
  /** The unpacked image: the read-only lower layer of the container's root. */
  readonly lower: string;
  /** The container's directory: its writable layer, the overlay's work dir and mount point. */
  readonly dir: string;
  readonly mounts: readonly PlacedMount[];
  readonly readOnlyRoot: boolean;
  /** Resolved like the mount targets. */
  readonly workingDir: string;
  readonly hostname: string;
  readonly user: RunAs;
  readonly noNewPrivs: boolean;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** The container's log: its stdout and stderr go there directly, not through the node agent. */
  readonly log: string;
};

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const inRoot = (path: string) => `"$R"${q(path)}`;

/** Device nodes a container gets from the host (runc's default set, without consoles). */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/**
 * The shell script that starts a container from an unpacked image, as runc would: an overlay
 * root (the image below, a fresh writable layer above, thrown away with the container), /proc,
 * a minimal /dev on tmpfs, a read-only /sys, the pod's files and volumes bound at their targets,
 * the working directory made if missing, the root made read-only when asked, then the program
 * run as the container's user in its root and working directory. Runs as root inside `ip netns
 * exec` (the pod's network namespace and a private mount namespace, so every mount goes with
 * the container) and `unshare --uts` (the pod's host name).
 */
export const ociLauncherScript = (o: OciLaunch): string => {
  const lines = [
    'set -eu',
    // Setting the host name outside a UTS namespace of its own would rename the machine.
    '[ "$(readlink /proc/self/ns/uts)" != "$(readlink /proc/1/ns/uts)" ] || { echo "no UTS namespace of its own" >&2; exit 1; }',
    // Written by the container itself, as a runtime's shim does: all of it is in the file when
    // the process is gone (through the node agent's pipe, the last lines could come later).
    `exec >>${q(o.log)} 2>&1`,
    `R=${q(`${o.dir}/root`)}`,
    `mkdir -p "$R" ${q(`${o.dir}/upper`)} ${q(`${o.dir}/work`)}`,
    `mount -t overlay overlay -o ${q(`lowerdir=${o.lower},upperdir=${o.dir}/upper,workdir=${o.dir}/work`)} "$R"`,
    'mkdir -p "$R/proc" "$R/dev" "$R/sys"',
    'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
    'mount -t tmpfs -o nosuid,mode=755,size=65536k tmpfs "$R/dev"',
    ...DEVICES.flatMap((d) => [`touch "$R/dev/${d}"`, `mount --bind /dev/${d} "$R/dev/${d}"`]),
    'mkdir "$R/dev/pts" "$R/dev/shm"',
    'mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec devpts "$R/dev/pts"',
    'ln -s pts/ptmx "$R/dev/ptmx"',
    'mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=65536k shm "$R/dev/shm"',
    'ln -s /proc/self/fd "$R/dev/fd"',
    'ln -s /proc/self/fd/0 "$R/dev/stdin"',
    'ln -s /proc/self/fd/1 "$R/dev/stdout"',
    'ln -s /proc/self/fd/2 "$R/dev/stderr"',
    'mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"',
    `hostname ${q(o.hostname)}`,
  ];
  for (const m of o.mounts) {
    const target = inRoot(m.target);
    if (m.kind === 'dir') lines.push(`mkdir -p ${target}`);
    else {
      const parent = m.target.slice(0, m.target.lastIndexOf('/')) || '/';
      lines.push(`mkdir -p ${inRoot(parent)}`, `[ -e ${target} ] || touch ${target}`);
    }
    lines.push(`mount --bind ${q(m.source)} ${target}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${target}`);
  }
  lines.push(`mkdir -p ${inRoot(o.workingDir)}`);
  if (o.readOnlyRoot) lines.push('mount -o remount,bind,ro "$R"');

  const env = Object.entries(o.env).map(([k, v]) => q(`${k}=${v}`));
  const groups = o.user.groups.length > 0 ? `--groups=${o.user.groups.join(',')}` : '--clear-groups';
  // setpriv sets the group and supplementary groups while still root (nsenter's own --setgid
  // would clear the supplementary groups), nsenter enters the root and working directory and
  // becomes the user; PATH for finding argv[0] is the container's, looked up inside the root.
  const exec = [
    'exec /usr/bin/env -i',
    ...env,
    '/usr/bin/setpriv',
    ...(o.noNewPrivs ? ['--no-new-privs'] : []),
    `--regid=${o.user.gid}`,
    groups,
    '-- /usr/bin/nsenter --root="$R"',
    `--wd=${inRoot(o.workingDir)}`,
    ...(o.user.uid !== 0 ? [`--setuid=${o.user.uid}`] : []),
    '--',
    ...o.argv.map(q),
  ];
  lines.push(exec.join(' '));
  return `${lines.join('\n')}\n`;
};
