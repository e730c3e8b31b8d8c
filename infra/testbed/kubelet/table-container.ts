import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageEntry } from '../node-agent/types.ts';
import { resolveArgv } from './command.ts';
import { ContainerConfigError, containerEnv } from './env.ts';
import { launcherScript } from './launcher.ts';
import type { HostMount } from './mounts.ts';
import type { ExecIdentity, PodFiles } from './oci-container.ts';

/**
 * A container of an image-table image: the machine's own file system (see launcherScript) with
 * the image's programs first on PATH at /tideway/bin, run as root, in the image's WorkingDir and
 * with its environment unless the pod says otherwise.
 */
export const prepareTableContainer = async (o: {
  image: string;
  entry: ImageEntry;
  pod: V1Pod;
  spec: V1Container;
  podEnv: Readonly<Record<string, string>>;
  volumes: readonly HostMount[];
  /** The pod's /etc/hosts and /etc/resolv.conf, in place of the machine's (as for every container). */
  podFiles: Pick<PodFiles, 'hosts' | 'resolvConf'>;
  dir: string;
  /** The container's log file. */
  log: string;
}): Promise<{ script: string; exec: ExecIdentity }> => {
  const binDir = join(o.dir, 'bin');
  await mkdir(binDir, { recursive: true });
  await mkdir(join(o.dir, 'tmp'), { recursive: true });
  for (const [program, path] of Object.entries(o.entry.programs)) await symlink(path, join(binDir, program));
  const env = containerEnv({
    image: o.entry.config.env,
    hostname: o.pod.metadata?.name ?? '',
    home: '/root',
    pod: o.podEnv,
  });
  const argv = resolveArgv(
    { entrypoint: o.entry.entrypoint ?? o.entry.config.entrypoint, cmd: o.entry.config.cmd },
    o.spec.command,
    o.spec.args,
    o.podEnv,
  );
  if (argv.length === 0)
    throw new ContainerConfigError(`image ${o.image} has no command and the pod gives none`);
  const script = launcherScript({
    root: join(o.dir, 'root'),
    tmp: join(o.dir, 'tmp'),
    mounts: [
      { hostPath: binDir, containerPath: '/tideway/bin', readOnly: true },
      ...o.volumes.map((v) => ({ hostPath: v.source, containerPath: v.containerPath, readOnly: v.readOnly })),
    ],
    podFiles: [
      // A volume at /etc/hosts replaces kubelet's, as with the runtime.
      ...(o.volumes.some((v) => v.containerPath === '/etc/hosts')
        ? []
        : [{ hostPath: o.podFiles.hosts, containerPath: '/etc/hosts' }]),
      { hostPath: o.podFiles.resolvConf, containerPath: '/etc/resolv.conf' },
    ],
    workingDir: o.spec.workingDir || o.entry.config.workingDir || '/',
    argv,
    env,
    log: o.log,
  });
  return { script, exec: { uid: 0, gid: 0, path: env.PATH ?? '' } };
};
