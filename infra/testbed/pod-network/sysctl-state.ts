import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheDir } from '../paths.ts';
import { readSysctl, writeSysctl } from './commands.ts';

/**
 * The sysctls the test bed changes, as they were before its first change. Kept on disk so a run
 * that was killed can still be undone by the next start; removed once restored.
 */
const stateFile = (prefix: string) => join(cacheDir(), 'state', `${prefix}-sysctl.json`);

export const SYSCTLS = [
  '/proc/sys/net/ipv4/ip_forward',
  '/proc/sys/net/bridge/bridge-nf-call-iptables',
  '/proc/sys/net/ipv4/conf/all/route_localnet',
] as const;

export const saveSysctls = async (prefix: string): Promise<void> => {
  const existing = await readFile(stateFile(prefix), 'utf8').catch(() => undefined);
  if (existing) return; // an earlier, unfinished run already saved the true originals
  const values: Record<string, string> = {};
  for (const p of SYSCTLS) values[p] = await readSysctl(p).catch(() => '');
  await mkdir(join(cacheDir(), 'state'), { recursive: true });
  await writeFile(stateFile(prefix), JSON.stringify(values));
};

export const restoreSysctls = async (prefix: string): Promise<void> => {
  const text = await readFile(stateFile(prefix), 'utf8').catch(() => undefined);
  if (!text) return;
  for (const [p, v] of Object.entries(JSON.parse(text) as Record<string, string>)) {
    if (v !== '') await writeSysctl(p, v).catch(() => undefined);
  }
  await rm(stateFile(prefix), { force: true });
};
