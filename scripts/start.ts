import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { installTideway } from '../infra/install.ts';
import { keepTokensFresh, requireRoles, writeFunctionKubeconfig } from '../infra/rbac/credentials.ts';
import { runTestbedForeground } from '../infra/testbed/cli.ts';
import { envVars } from '../infra/testbed/env-file.ts';
import { loadServerless } from '../shared/runtime/config.ts';
import { createLogger } from '../shared/runtime/logger.ts';
import { type Supervisor, startFunctions } from '../shared/runtime/supervisor.ts';
import { prepareLocalWebhook } from './local-webhook.ts';

// npm start: the local stack (the test bed) plus the operator: Tideway's CRDs and namespace, then
// every function of serverless.yml as its own processes, restarted when they crash.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const serverlessFile = join(root, 'serverless.yml');
let functions: Supervisor | undefined;
let tokens: ReturnType<typeof keepTokensFresh> | undefined;

await runTestbedForeground({
  root,
  onReady: async (bed) => {
    await installTideway({ kubectl: bed.kubectl, kubeconfig: bed.kubeconfig, fieldManager: 'tideway' });
    const env = envVars(bed);
    const config = await loadServerless(serverlessFile);
    // Each function acts as its own ServiceAccount with its least-privilege roles, as deployed.
    const admin = new KubeConfig();
    admin.loadFromFile(bed.kubeconfig);
    const kubeconfigs: Record<string, string> = {};
    const dir = join(root, '.tideway', 'local', 'kube');
    requireRoles(Object.keys(config.functions));
    for (const fn of Object.keys(config.functions))
      kubeconfigs[fn] = await writeFunctionKubeconfig({ admin, fn, dir });
    const log = createLogger({ component: 'tideway-start' });
    tokens = keepTokensFresh({
      admin,
      fns: Object.keys(kubeconfigs),
      dir,
      onError: (fn, error) => log.warn('token not renewed; retrying in a minute', { function: fn, error }),
    });
    // The webhook: a port, and the secret it is signed with (Secret tideway-webhook in default).
    const webhook = config.functions.webhook ? await prepareLocalWebhook(admin) : undefined;
    functions = startFunctions({
      serverlessFile,
      config,
      // Ctrl-C stops every function within this (in-flight work is redone on the next start).
      env: { ...env, TIDEWAY_TERMINATION_GRACE_PERIOD_SECONDS: '10' },
      envFor: (fn) => ({
        KUBECONFIG: kubeconfigs[fn] ?? '',
        ...(fn === 'webhook' ? webhook?.env : {}),
        // The restore feed listens where the pods reach this host: the test bed's bridge address.
        ...(fn === 'restore' ? { TIDEWAY_RESTORE_FEED_HOST: bed.network.hostIp } : {}),
      }),
      log,
    });
    process.stderr.write(`[tideway] functions started: ${Object.keys(functions.pids()).join(', ')}\n`);
    await webhook?.ready();
    return webhook?.vars ?? {};
  },
  onStop: async () => {
    await tokens?.stop();
    await functions?.stop();
    // The tokens die with the cluster; no credential files are left behind.
    await rm(join(root, '.tideway', 'local', 'kube'), { recursive: true, force: true });
  },
});
