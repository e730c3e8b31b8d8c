import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { run } from './exec/run.ts';
import { TESTBED_ENV_MARKER, TESTBED_PREFIX } from './paths.ts';

const quiet = (p: Promise<string>) => p.catch(() => '');

/**
 * Everything of the test bed still on this machine: marked processes, network namespaces,
 * links, routes, iptables rules (ours and kube-proxy's), temp directories. Empty means clean.
 */
export const findLeftovers = async (): Promise<string[]> => {
  const found: string[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (environ.includes(`${TESTBED_ENV_MARKER}=`)) {
      const cmd = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
      found.push(`process ${pid}: ${cmd.trim()}`);
    }
  }
  for (const line of (await quiet(run('ip', ['netns', 'list']))).split('\n')) {
    if (line.startsWith(TESTBED_PREFIX)) found.push(`network namespace ${line.split(' ')[0]}`);
  }
  for (const line of (await quiet(run('ip', ['-o', 'link', 'show']))).split('\n')) {
    const name = line.split(': ')[1]?.split('@')[0];
    if (name?.startsWith(TESTBED_PREFIX)) found.push(`link ${name}`);
  }
  for (const line of (await quiet(run('ip', ['route', 'show']))).split('\n')) {
    if (line.includes(TESTBED_PREFIX)) found.push(`route ${line.trim()}`);
  }
  for (const tool of ['iptables-save', 'ip6tables-save']) {
    for (const line of (await quiet(run(tool, []))).split('\n')) {
      if (line.includes(TESTBED_PREFIX) || line.includes('KUBE-')) found.push(`${tool}: ${line.trim()}`);
    }
  }
  for (const entry of await readdir(tmpdir())) {
    if (entry.startsWith(`${TESTBED_PREFIX}-`) || entry === `${TESTBED_PREFIX}.lock`)
      found.push(`temp ${entry}`);
  }
  return found;
};
