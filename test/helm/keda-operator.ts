import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureKedaCrds } from '../../infra/testbed/build/index.ts';
import { bin, TESTBED_ENV_MARKER } from '../../infra/testbed/paths.ts';
import type { TestbedInfo } from '../../infra/testbed/types.ts';
import { type bed, until } from '../support/bed.ts';

/** KEDA's CRDs at its pin (from its module) on the test bed, served. Idempotent. */
export const installKedaCrds = async (b: ReturnType<typeof bed>): Promise<void> => {
  const dir = await ensureKedaCrds((m) => process.stderr.write(`${m}\n`));
  await b.kubectl('apply', '--server-side', '--field-manager=tideway-tests', '-f', dir);
  await until('KEDA CRDs established', async () => {
    const crd = await b.apiext.readCustomResourceDefinition({ name: 'scaledobjects.keda.sh' });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
      ? true
      : undefined;
  });
};

export type KedaOperator = { stop(): Promise<void>; output(): string; exitCode(): number | null };

/**
 * host:port of the test bed's NATS monitoring endpoint, where KEDA reads consumer lag. The test
 * bed does not report it (TestbedInfo has no such field yet), so it is read from the NATS
 * configuration the test bed wrote (infra/testbed/servers/nats.ts).
 */
export const natsMonitoringEndpoint = (info: TestbedInfo): string => {
  const file = join(info.dir, 'nats', 'nats.conf');
  const endpoint = existsSync(file) ? /^http: (\S+)$/m.exec(readFileSync(file, 'utf8'))?.[1] : undefined;
  if (!endpoint) throw new Error(`no monitoring endpoint (http: host:port) in ${file}`);
  return endpoint;
};

/** A CA and a serving certificate for the operator's metrics service, which will not start without. */
const writeCerts = (dir: string) => {
  mkdirSync(dir, { recursive: true });
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=keda-ca',
  );
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=keda');
  writeFileSync(join(dir, 'ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl(
    ...['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'],
    ...['-out', 'tls.crt', '-days', '2', '-extfile', 'ext'],
  );
};

/**
 * KEDA's operator (bin/keda, built at its pin) out of the cluster, as the admin, watching one
 * namespace. It scales between zero and one replica by itself; beyond, its HPA would need KEDA's
 * metrics server, which is not run. Carries the test bed's marker, so a crashed run's is cleaned up.
 */
export const startKedaOperator = (o: {
  info: TestbedInfo;
  watchNamespace: string;
  objectNamespace: string;
  dir: string;
}): KedaOperator => {
  const certs = join(o.dir, 'certs');
  writeCerts(certs);
  const child: ChildProcess = spawn(
    bin('keda'),
    [
      '--metrics-bind-address=127.0.0.1:0',
      '--health-probe-bind-address=127.0.0.1:0',
      '--metrics-service-bind-address=127.0.0.1:0',
      `--cert-dir=${certs}`,
      '--leader-elect=false',
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: o.info.kubeconfig,
        WATCH_NAMESPACE: o.watchNamespace,
        KEDA_CLUSTER_OBJECT_NAMESPACE: o.objectNamespace,
        [TESTBED_ENV_MARKER]: o.info.id,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-50_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = once(child, 'exit');
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    output: () => output,
    exitCode: () => child.exitCode,
  };
};
