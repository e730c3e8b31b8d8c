import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  directoryView,
  mountedView,
  RootPathError,
  resolveInRoot,
  type ViewMount,
} from '../image-table/root-path.ts';
import type { HeldImage } from '../image-table/store.ts';
import { resolveArgv } from './command.ts';
import { ContainerConfigError, containerEnv } from './env.ts';
import { podHostname } from './etc-files.ts';
import type { HostMount } from './mounts.ts';
import { ociLauncherScript, type PlacedMount } from './oci-launcher.ts';
import { parseGroup, parsePasswd, resolveUser } from './user.ts';

/** The files kubelet keeps per pod and mounts into each container. */
export type PodFiles = { readonly hosts: string; readonly resolvConf: string; readonly hostname: string };

/** How a started container is entered by exec probes. */
export type ExecIdentity = { readonly uid: number; readonly gid: number; readonly path: string };

export type PreparedOci = {
  readonly script: string;
  readonly exec: ExecIdentity;
  /** The host file the container writes its termination message to. */
  readonly terminationLog: string;
};

const depth = (p: string) => p.split('/').filter(Boolean).length;

/** A file of the image, read through the image's own symlinks, never outside it; '' when absent. */
const imageFile = async (lower: string, path: string) => {
  const inside = await resolveInRoot(directoryView(lower), path).catch(() => undefined);
  return inside ? readFile(join(lower, inside), 'utf8').catch(() => '') : '';
};

/**
 * Everything needed to start a container of a held image: its user, environment, argv and file
 * system (the pod's volumes, /etc/hosts, /etc/hostname, /etc/resolv.conf and the termination log
 * bound at their paths, each resolved inside the root as it will be when mounted, in the order
 * containerd mounts them: by depth, then as listed).
 */
export const prepareOciContainer = async (o: {
  image: HeldImage;
  lower: string;
  pod: V1Pod;
  spec: V1Container;
  podEnv: Readonly<Record<string, string>>;
  volumes: readonly HostMount[];
  podFiles: PodFiles;
  dir: string;
  /** The container's log file. */
  log: string;
  /**
   * The test bed's process marker (see paths.ts). Table containers keep the parent-death signal
   * the node agent's processes get; this process loses it when it becomes its user, so a test
   * bed killed outright finds it again by this variable at its next start.
   */
  marker: Readonly<Record<string, string>>;
}): Promise<PreparedOci> => {
  const { image, lower, spec } = o;
  const lowerView = directoryView(lower);
  // Mount points the launcher uses itself: a symlink there would take a mount out of the root.
  for (const p of ['/proc', '/dev', '/sys']) {
    const kind = await lowerView.kind(p);
    if (kind !== undefined && kind !== 'dir')
      throw new ContainerConfigError(`image ${image.ref}: ${p} is not a directory`);
  }
  const user = resolveUser({
    imageUser: image.config.user,
    pod: o.pod.spec?.securityContext,
    container: spec.securityContext,
    passwd: parsePasswd(await imageFile(lower, '/etc/passwd')),
    group: parseGroup(await imageFile(lower, '/etc/group')),
  });
  const hostname = podHostname(o.pod);
  const env = {
    ...containerEnv({ image: image.config.env, hostname, home: user.home, pod: o.podEnv }),
    ...o.marker,
  };
  const argv = resolveArgv(image.config, spec.command, spec.args, o.podEnv);
  if (argv.length === 0)
    throw new ContainerConfigError(
      `image ${image.ref} has no ENTRYPOINT or CMD and the pod gives no command`,
    );

  const terminationLog = join(o.dir, 'termination-log');
  await writeFile(terminationLog, '');
  await chmod(terminationLog, 0o666); // the container's user writes it
  const wanted = [
    ...o.volumes.map((v) => ({ ...v, kind: undefined as 'file' | undefined })),
    ...(o.volumes.some((v) => v.containerPath === '/etc/hosts')
      ? []
      : [{ source: o.podFiles.hosts, containerPath: '/etc/hosts', readOnly: false, kind: 'file' as const }]),
    { source: o.podFiles.hostname, containerPath: '/etc/hostname', readOnly: false, kind: 'file' as const },
    {
      source: o.podFiles.resolvConf,
      containerPath: '/etc/resolv.conf',
      readOnly: false,
      kind: 'file' as const,
    },
    {
      source: terminationLog,
      containerPath: spec.terminationMessagePath || '/dev/termination-log',
      readOnly: false,
      kind: 'file' as const,
    },
  ]
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.containerPath) - depth(b.m.containerPath) || a.i - b.i)
    .map(({ m }) => m);

  const layers: ViewMount[] = [
    { path: '/', host: lower },
    { path: '/proc', host: undefined },
    { path: '/dev', host: undefined },
    { path: '/sys', host: undefined },
  ];
  const placed: PlacedMount[] = [];
  for (const m of wanted) {
    const target = await resolveInRoot(mountedView(layers), m.containerPath).catch((error: unknown) => {
      if (error instanceof RootPathError)
        throw new ContainerConfigError(`mount at ${m.containerPath}: ${error.message}`);
      throw error;
    });
    if (
      target === '/' ||
      target === '/proc' ||
      target.startsWith('/proc/') ||
      target === '/sys' ||
      target.startsWith('/sys/')
    )
      throw new ContainerConfigError(`mount at ${m.containerPath}: not allowed over ${target}`);
    const st = await stat(m.source).catch(() => undefined);
    if (!st) throw new ContainerConfigError(`mount at ${m.containerPath}: ${m.source} does not exist`);
    const kind = m.kind ?? (st.isDirectory() ? 'dir' : 'file');
    placed.push({ source: m.source, target, kind, readOnly: m.readOnly });
    layers.push({ path: target, host: m.source });
  }
  const workingDir = await resolveInRoot(
    mountedView(layers),
    spec.workingDir || image.config.workingDir || '/',
  ).catch((error: Error) => {
    throw new ContainerConfigError(`workingDir: ${error.message}`);
  });

  const script = ociLauncherScript({
    lower,
    dir: o.dir,
    mounts: placed,
    readOnlyRoot: spec.securityContext?.readOnlyRootFilesystem ?? false,
    workingDir,
    hostname,
    user,
    noNewPrivs: spec.securityContext?.allowPrivilegeEscalation === false,
    argv,
    env,
    log: o.log,
  });
  return { script, exec: { uid: user.uid, gid: user.gid, path: env.PATH ?? '' }, terminationLog };
};
