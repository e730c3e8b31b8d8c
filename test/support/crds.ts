import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestbedInfo } from '../../infra/testbed/types.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Installs Tideway's CRDs from crds/ (server-side apply: idempotent) and its namespace (the
 * watcher's Lease lives there), and waits until the CRDs are served.
 */
export const installCrds = async (info: TestbedInfo): Promise<void> => {
  const run = (...args: string[]) =>
    promisify(execFile)(info.kubectl, args, { env: { ...process.env, KUBECONFIG: info.kubeconfig } });
  await run(
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=tideway-tests',
    '-f',
    join(root, 'crds'),
  );
  await run('create', 'namespace', 'tideway-system').catch((e: { stderr?: string }) => {
    if (!e.stderr?.includes('AlreadyExists')) throw e;
  });
  await run(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...['redisclusters', 'backups', 'backupschedules', 'restores'].map((p) => `crd/${p}.tideway.dev`),
  );
};
