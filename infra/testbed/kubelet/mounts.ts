import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import { directoryView, resolveInRoot } from '../image-table/root-path.ts';
import { expand } from './command.ts';
import { ContainerConfigError } from './env.ts';
import type { PodVolumes } from './volumes.ts';

/** A volume (or a part of one) and where the container sees it. */
export type HostMount = {
  readonly source: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
};

/**
 * The container's volumeMounts on the host. A subPath (or subPathExpr, expanded with the pod's
 * variables) must be relative without `..`, and is resolved inside its volume, so a symlink that
 * another container put in a shared volume cannot point the mount outside it; a missing one is
 * made in a writable volume, as kubelet does. It is bound as what it resolves to now (through
 * `..data` for API data): like kubelet, later refreshes of the volume do not reach it.
 */
export const volumeMounts = async (
  spec: V1Container,
  volumes: PodVolumes,
  env: Readonly<Record<string, string>>,
): Promise<HostMount[]> => {
  const out: HostMount[] = [];
  for (const m of spec.volumeMounts ?? []) {
    const volume = volumes.get(m.name);
    if (!volume) throw new ContainerConfigError(`volumeMount ${m.name} names no volume of the pod`);
    const readOnly = volume.readOnly || (m.readOnly ?? false);
    const sub = m.subPathExpr ? expand(m.subPathExpr, env) : m.subPath;
    if (!sub) {
      out.push({ source: volume.path, containerPath: m.mountPath, readOnly });
      continue;
    }
    if (sub.startsWith('/') || sub.split('/').includes('..'))
      throw new ContainerConfigError(
        `volumeMount ${m.name}: subPath "${sub}" must be relative, without ".."`,
      );
    const inside = await resolveInRoot(directoryView(volume.path), sub).catch((error: Error) => {
      throw new ContainerConfigError(`volumeMount ${m.name}: subPath "${sub}": ${error.message}`);
    });
    const source = join(volume.path, inside);
    if (!volume.readOnly) await mkdir(source, { recursive: true }).catch(() => undefined); // a file stays a file
    out.push({ source, containerPath: m.mountPath, readOnly });
  }
  return out;
};
