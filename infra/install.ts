import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where Tideway's own objects live: the watcher's Lease, and later the operator's Secrets. */
export const SYSTEM_NAMESPACE = 'tideway-system';

/**
 * Installs Tideway's CRDs from crds/ (server-side apply: idempotent), its namespace and each
 * function's ServiceAccount and roles, and waits
 * until the CRDs are served. Used by `npm start` and by the e2e tests.
 */
export const installTideway = async (o: { kubectl: string; kubeconfig: string; fieldManager: string }) => {
  const run = (...args: string[]) =>
    promisify(execFile)(o.kubectl, args, { env: { ...process.env, KUBECONFIG: o.kubeconfig } });
  const apply = (dir: string) =>
    run('apply', '--server-side', '--force-conflicts', `--field-manager=${o.fieldManager}`, '-f', dir);
  await apply(join(root, 'crds'));
  await run('create', 'namespace', SYSTEM_NAMESPACE).catch((e: { stderr?: string }) => {
    if (!e.stderr?.includes('AlreadyExists')) throw e;
  });
  // Each function's ServiceAccount and least-privilege roles (infra/rbac/<function>.yaml).
  await apply(join(root, 'infra', 'rbac'));
  await run(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...['redisclusters', 'backups', 'backupschedules', 'restores'].map((p) => `crd/${p}.tideway.dev`),
  );
};
