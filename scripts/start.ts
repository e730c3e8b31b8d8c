import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ChartOnTestbed, installChartOnTestbed } from '../infra/helm/local/install.ts';
import { installTideway } from '../infra/install.ts';
import { keepTokensFresh, requireRoles, writeFunctionKubeconfig } from '../infra/rbac/credentials.ts';
import { runTestbedForeground } from '../infra/testbed/cli.ts';
import { envVars } from '../infra/testbed/env-file.ts';
import type { Testbed } from '../infra/testbed/types.ts';
import { loadServerless } from '../shared/runtime/config.ts';
import { createLogger } from '../shared/runtime/logger.ts';
import { type Supervisor, startFunctions } from '../shared/runtime/supervisor.ts';
import { ensureImage } from './image/build.ts';
import { prepareLocalWebhook, webhookReady, writeLocalWebhookSecret } from './local-webhook.ts';

// npm start: the local stack (the test bed) plus the operator: Tideway's CRDs and namespace, then
// every function of serverless.yml as its own processes, restarted when they crash.
// npm start -- --chart: the same stack, with Tideway installed by its Helm chart instead: the
// functions run as pods from Tideway's image, and KEDA scales the event functions from zero.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const serverlessFile = join(root, 'serverless.yml');
const RELEASE_NAMESPACE = 'tideway-system';
const chartMode = process.argv.slice(2).includes('--chart');
const log = (m: string) => process.stderr.write(`${m}\n`);

let functions: Supervisor | undefined;
let tokens: ReturnType<typeof keepTokensFresh> | undefined;
let chart: ChartOnTestbed | undefined;

const adminOf = (bed: Testbed) => {
  const admin = new KubeConfig();
  admin.loadFromFile(bed.kubeconfig);
  return admin;
};

/** The functions as local processes, each as its own ServiceAccount with its least-privilege roles. */
const startLocal = async (bed: Testbed): Promise<Record<string, string>> => {
  await installTideway({ kubectl: bed.kubectl, kubeconfig: bed.kubeconfig, fieldManager: 'tideway' });
  const env = envVars(bed);
  const config = await loadServerless(serverlessFile);
  const admin = adminOf(bed);
  const kubeconfigs: Record<string, string> = {};
  const dir = join(root, '.tideway', 'local', 'kube');
  requireRoles(Object.keys(config.functions));
  for (const fn of Object.keys(config.functions))
    kubeconfigs[fn] = await writeFunctionKubeconfig({ admin, fn, dir });
  const logger = createLogger({ component: 'tideway-start' });
  tokens = keepTokensFresh({
    admin,
    fns: Object.keys(kubeconfigs),
    dir,
    onError: (fn, error) => logger.warn('token not renewed; retrying in a minute', { function: fn, error }),
  });
  // The webhook: a port, and the secret it is signed with (Secret tideway-webhook in default).
  const webhook = config.functions.webhook ? await prepareLocalWebhook(admin) : undefined;
  // Tideway's image, which the node runs as the first member's restore step of an EtcdCluster made
  // from a backup (cached; rebuilt when the code changed). Without it such a cluster says why it waits.
  const image = await ensureImage({ root, log: (m) => log(`[image] ${m}`) }).then(
    (built) => built.image,
    (error: unknown) => {
      logger.warn('no image: an EtcdCluster made from a backup waits with RestoreUnavailable', { error });
      return undefined;
    },
  );
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
      ...(image ? { TIDEWAY_IMAGE: image } : {}),
    }),
    log: logger,
  });
  log(`[tideway] functions started: ${Object.keys(functions.pids()).join(', ')}`);
  await webhook?.ready();
  return webhook?.vars ?? {};
};

/** Tideway as a user installs it into a cluster: `helm install` of infra/helm/tideway. */
const startChart = async (bed: Testbed): Promise<Record<string, string>> => {
  const admin = adminOf(bed);
  const secret = await writeLocalWebhookSecret(admin);
  chart = await installChartOnTestbed({
    info: bed,
    root,
    release: 'tideway',
    namespace: RELEASE_NAMESPACE,
    // Quicker than the chart's defaults, so that scaling from zero shows while one watches.
    keda: { pollingInterval: 2, cooldownPeriod: 60, initialCooldownPeriod: 60 },
    log,
  });
  // The webhook's Service, reached from this host through kube-proxy like any client in the cluster.
  const service = await admin
    .makeApiClient(CoreV1Api)
    .readNamespacedService({ namespace: RELEASE_NAMESPACE, name: 'tideway-webhook' });
  const url = `http://${service.spec?.clusterIP}:${service.spec?.ports?.[0]?.port ?? 80}`;
  await webhookReady(url);
  log(
    `[tideway] installed with helm (release tideway in ${RELEASE_NAMESPACE}, image ${chart.image}); ` +
      `function logs: ${join(bed.dir, 'node', 'pods')}/<pod uid>/<container>.log`,
  );
  return { TIDEWAY_WEBHOOK_URL: url, TIDEWAY_WEBHOOK_SECRET: secret };
};

await runTestbedForeground({
  root,
  onReady: chartMode ? startChart : startLocal,
  onStop: async () => {
    await chart?.stop();
    await tokens?.stop();
    await functions?.stop();
    // The tokens die with the cluster; no credential files are left behind.
    await rm(join(root, '.tideway', 'local', 'kube'), { recursive: true, force: true });
  },
});
