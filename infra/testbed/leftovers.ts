import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './exec/run.ts';
import { TESTBED_ENV_MARKER, TESTBED_PREFIX } from './paths.ts';
import { cleanupNetworkLeftovers } from './pod-network/index.ts';

/** Processes started by an earlier test bed (they carry the marker in their environment). */
const markedProcesses = async (): Promise<number[]> => {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (environ.split('\0').some((kv) => kv.startsWith(`${TESTBED_ENV_MARKER}=`))) pids.push(pid);
  }
  return pids;
};

/**
 * Clears what a killed run left behind, by the test bed's prefix and marker: processes, mounts,
 * network namespaces, bridge, routes, iptables chains and temp directories.
 */
export const cleanupLeftovers = async (log: (msg: string) => void): Promise<void> => {
  const pids = await markedProcesses();
  if (pids.length > 0) log(`killing ${pids.length} leftover process(es) of an earlier run`);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await cleanupNetworkLeftovers(TESTBED_PREFIX, { kubeProxy: true });
  const prefix = `${TESTBED_PREFIX}-`;
  const tmp = tmpdir();
  for (const entry of await readdir(tmp)) {
    if (!entry.startsWith(prefix)) continue;
    const dir = join(tmp, entry);
    // Bind mounts only live in pods' private mount namespaces, but unmount defensively before rm.
    const mounts = (await readFile('/proc/self/mounts', 'utf8'))
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m.startsWith(dir))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) await run('umount', ['-l', m]).catch(() => undefined);
    log(`removing leftover directory ${dir}`);
    await rm(dir, { recursive: true, force: true });
  }
};
