import { join } from 'node:path';
import { bin } from '../paths.ts';
import { type ManagedProcess, startProcess, waitReady } from '../process/managed-process.ts';
import { freePort } from '../process/ports.ts';

export type Etcd = { readonly url: string; readonly process: ManagedProcess };

export type EtcdOptions = { dir: string; testbedId: string; clientPort: number; peerPort: number };

export const etcdPorts = async () => ({ clientPort: await freePort(), peerPort: await freePort() });

export const startEtcd = async (o: EtcdOptions): Promise<Etcd> => {
  const { clientPort, peerPort } = o;
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = startProcess({
    name: 'etcd',
    command: bin('etcd'),
    args: [
      `--data-dir=${join(o.dir, 'etcd')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      '--listen-metrics-urls=',
      // A throwaway cluster: durability across power loss is not needed, speed is.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    logFile: join(o.dir, 'etcd.log'),
    testbedId: o.testbedId,
  });
  await waitReady(proc, async () => (await fetch(`${url}/health`)).ok, { timeoutMs: 30_000 });
  return { url, process: proc };
};
