import { run } from '../exec/run.ts';

export const ip = (...args: string[]) => run('ip', args);
/** Like ip, but a failure (already gone) is fine: for idempotent teardown. */
export const ipQuiet = (...args: string[]) => run('ip', args).catch(() => '');
export const ipt = (family: 4 | 6, ...args: string[]) =>
  run(family === 4 ? 'iptables' : 'ip6tables', ['-w', ...args]);
export const iptQuiet = (family: 4 | 6, ...args: string[]) => ipt(family, ...args).catch(() => '');

export const readSysctl = async (path: string) =>
  (await import('node:fs/promises')).readFile(path, 'utf8').then((s) => s.trim());
export const writeSysctl = async (path: string, value: string) =>
  (await import('node:fs/promises')).writeFile(path, value);
