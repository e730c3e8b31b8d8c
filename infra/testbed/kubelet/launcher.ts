import { existsSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Mount = { hostPath: string; containerPath: string; readOnly: boolean };

const SKIP = new Set(['proc', 'sys', 'dev', 'tmp', 'run']);
const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The shell script that builds a container's view of the file system and execs its program:
 * a root directory whose entries are bind mounts of the host's, volumes bound at their mount
 * paths, then chroot. A mount path under a host directory that lacks it (e.g. /etc/redis) makes
 * that directory "expanded": a real directory in the pod root with the host entries bound one by
 * one, so nothing is ever created on the host. Runs inside `ip netns exec`, which gives it a
 * mount namespace of its own: every mount goes away with the container.
 */
export const launcherScript = (o: {
  root: string;
  tmp: string;
  mounts: readonly Mount[];
  /**
   * Files kubelet manages (the pod's /etc/hosts and /etc/resolv.conf), bound in place of the
   * machine's own without touching them: over the machine's file when it is a plain file (one
   * mount, in this mount namespace only); when it is a symlink (a local resolver's resolv.conf)
   * or missing, its directory is expanded and the link left out, as a bind would follow it.
   */
  podFiles?: readonly { hostPath: string; containerPath: string }[];
  workingDir: string;
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  /** The container's log, written by the container directly (see ociLauncherScript). */
  log: string;
}): string => {
  const lines = ['set -e', `exec >>${q(o.log)} 2>&1`, `R=${q(o.root)}`, 'mkdir -p "$R"'];
  const workingDir = o.workingDir.replace(/\/+$/, '') || '/';
  // The working directory is made in the pod root like a mount path, never on the host.
  const podFiles = o.podFiles ?? [];
  const isFile = (path: string) => {
    try {
      return lstatSync(path).isFile();
    } catch {
      return false;
    }
  };
  const replaced = new Set(podFiles.map((f) => f.containerPath).filter((p) => !isFile(p)));
  const paths = [
    ...[...o.mounts.map((m) => m.containerPath), ...replaced].map((p) => p.replace(/\/+$/, '') || '/'),
    workingDir,
  ];
  const needsExpansion = (dir: string) => paths.some((p) => p.startsWith(`${dir}/`)) || paths.includes(dir);

  const place = (hostPath: string) => {
    if (replaced.has(hostPath)) return;
    const target = `"$R"${q(hostPath)}`;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(hostPath);
    } catch {
      return;
    }
    if (st.isSymbolicLink()) {
      lines.push(`ln -sfn "$(readlink ${q(hostPath)})" ${target}`);
    } else if (st.isDirectory()) {
      if (needsExpansion(hostPath)) {
        lines.push(`mkdir -p ${target}`);
        for (const entry of readdirSync(hostPath)) place(join(hostPath, entry));
      } else {
        lines.push(`mkdir -p ${target}`, `mount --rbind ${q(hostPath)} ${target}`);
      }
    } else if (st.isFile()) {
      lines.push(`touch ${target}`, `mount --bind ${q(hostPath)} ${target}`);
    }
  };

  for (const entry of readdirSync('/')) {
    if (!SKIP.has(entry)) place(`/${entry}`);
  }
  for (const d of ['proc', 'sys', 'dev']) lines.push(`mkdir -p "$R/${d}"`, `mount --rbind /${d} "$R/${d}"`);
  lines.push(`mkdir -p "$R/tmp" "$R/run"`, `mount --bind ${q(o.tmp)} "$R/tmp"`);
  for (const f of podFiles) {
    if (replaced.has(f.containerPath)) lines.push(`touch "$R"${q(f.containerPath)}`);
    lines.push(`mount --bind ${q(f.hostPath)} "$R"${q(f.containerPath)}`);
  }
  // Longest paths last, so a volume inside another volume's path lands on top.
  for (const m of [...o.mounts].sort((a, b) => a.containerPath.length - b.containerPath.length)) {
    const target = `"$R"${q(m.containerPath)}`;
    // stat, not lstat: a subPath into a configMap or secret volume is a symlink through `..data`,
    // and mount(8) binds what it points to.
    if (existsSync(m.hostPath) && !statSync(m.hostPath).isDirectory()) lines.push(`touch ${target}`);
    else lines.push(`mkdir -p ${target}`);
    lines.push(`mount --bind ${q(m.hostPath)} ${target}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${target}`);
  }
  // Made if missing, as runc does (a volume mounted there is in place already).
  lines.push(`mkdir -p "$R"${q(workingDir)}`);
  const env = Object.entries(o.env).map(([k, v]) => q(`${k}=${v}`));
  lines.push(
    `exec chroot "$R" /usr/bin/env -i ${env.join(' ')} /bin/sh -c 'cd "$1" && shift && exec "$@"' sh ${q(workingDir)} ${o.argv.map(q).join(' ')}`,
  );
  return `${lines.join('\n')}\n`;
};
