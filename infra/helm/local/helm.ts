import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bin } from '../../testbed/paths.ts';

export type HelmResult = { code: number; stdout: string; stderr: string };

/**
 * The test bed's helm (built at its pin, infra/testbed/build), against `kubeconfig` when given;
 * never throws, says how it ended.
 */
export const helm = async (args: readonly string[], kubeconfig?: string): Promise<HelmResult> => {
  try {
    const { stdout, stderr } = await promisify(execFile)(bin('helm'), [...args], {
      maxBuffer: 64 << 20,
      env: { ...process.env, ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}) },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
};

/** helm that fails with helm's own words. */
export const helmOrThrow = async (args: readonly string[], kubeconfig?: string): Promise<string> => {
  const r = await helm(args, kubeconfig);
  if (r.code !== 0) throw new Error(`helm ${args[0]} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
};

/** `--set` arguments from pairs. */
export const sets = (values: Readonly<Record<string, string>>): string[] =>
  Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
