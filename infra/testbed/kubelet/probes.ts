import { spawn } from 'node:child_process';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { canConnect } from '../process/ports.ts';
import type { ExecIdentity } from './oci-container.ts';

const portOf = (container: V1Container, port: number | string | undefined): number => {
  if (typeof port === 'number') return port;
  const named = container.ports?.find((p) => p.name === port)?.containerPort;
  return named ?? Number(port);
};

/** One probe attempt: exec inside the container (see `as`), tcpSocket or httpGet at the pod IP. */
export const runProbe = async (
  probe: V1Probe,
  container: V1Container,
  podIp: string,
  pid: number,
  as: ExecIdentity,
): Promise<boolean> => {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  const command = probe.exec?.command;
  if (command?.length) {
    return new Promise((resolve) => {
      // In the container's namespaces, root and working directory, as its user, with its PATH.
      const user = as.uid === 0 && as.gid === 0 ? [] : [`--setuid=${as.uid}`, `--setgid=${as.gid}`];
      const child = spawn(
        '/usr/bin/nsenter', // absolute: PATH here is the container's, for finding the command inside
        ['--target', String(pid), '--net', '--mount', '--uts', '--root', '--wd', ...user, '--', ...command],
        { stdio: 'ignore', env: { PATH: as.path } },
      );
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', () => resolve(false));
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
    });
  }
  if (probe.tcpSocket) return canConnect(podIp, portOf(container, probe.tcpSocket.port), timeoutMs);
  if (probe.httpGet) {
    const g = probe.httpGet;
    const url = `${(g.scheme ?? 'HTTP').toLowerCase()}://${podIp}:${portOf(container, g.port)}${g.path ?? '/'}`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      return res.status >= 200 && res.status < 400;
    } catch {
      return false;
    }
  }
  return false;
};

export type ProbeLoop = { stop(): void };

/**
 * Runs a probe like kubelet: after initialDelay, every period; the result flips after
 * failureThreshold failures or successThreshold successes.
 */
export const probeLoop = (
  probe: V1Probe,
  attempt: () => Promise<boolean>,
  onChange: (ok: boolean) => void,
  initial: boolean,
): ProbeLoop => {
  let state = initial;
  let fails = 0;
  let oks = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    if (stopped) return;
    const ok = await attempt().catch(() => false);
    if (stopped) return;
    if (ok) {
      fails = 0;
      oks++;
      if (!state && oks >= (probe.successThreshold ?? 1)) {
        state = true;
        onChange(true);
      }
    } else {
      oks = 0;
      fails++;
      if (state && fails >= (probe.failureThreshold ?? 3)) {
        state = false;
        onChange(false);
      } else if (!state && fails >= (probe.failureThreshold ?? 3)) {
        onChange(false);
      }
    }
    timer = setTimeout(tick, (probe.periodSeconds ?? 10) * 1000);
  };
  timer = setTimeout(tick, (probe.initialDelaySeconds ?? 0) * 1000);
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
};
