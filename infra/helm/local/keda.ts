import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureKedaCrds, type Log } from '../../testbed/build/index.ts';
import { CLUSTER_DOMAIN } from '../../testbed/dns/index.ts';
import { bin, TESTBED_ENV_MARKER } from '../../testbed/paths.ts';
import type { TestbedInfo } from '../../testbed/types.ts';

/** KEDA's CRDs at its pin (from its module) on the test bed, established. Idempotent. */
export const installKedaCrds = async (info: TestbedInfo, log: Log): Promise<void> => {
  const dir = await ensureKedaCrds(log);
  const kubectl = (...args: string[]) =>
    promisify(execFile)(info.kubectl, args, { env: { ...process.env, KUBECONFIG: info.kubeconfig } });
  await kubectl('apply', '--server-side', '--field-manager=tideway-testbed', '-f', dir);
  await kubectl('wait', '--for=condition=Established', '--timeout=60s', '-f', dir);
};

export type KedaOperator = { stop(): Promise<void>; output(): string; exitCode(): number | null };

/** A CA and a serving certificate for the operator's metrics service, which will not start without. */
const writeCerts = (dir: string) => {
  mkdirSync(dir, { recursive: true });
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl(
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt'],
    ...['-days', '2', '-subj', '/CN=keda-ca'],
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
 *
 * It resolves names as a pod would: in a mount namespace of its own, /etc/resolv.conf names the
 * test bed's cluster DNS, so the chart's default lag endpoint (the watcher's Service, by its
 * cluster name) works unchanged; the host reaches Service addresses through kube-proxy's rules.
 */
export const startKedaOperator = (o: {
  info: TestbedInfo;
  watchNamespace: string;
  objectNamespace: string;
  dir: string;
}): KedaOperator => {
  const certs = join(o.dir, 'certs');
  writeCerts(certs);
  const resolvConf = join(o.dir, 'resolv.conf');
  writeFileSync(
    resolvConf,
    `nameserver ${o.info.network.hostIp}\nsearch svc.${CLUSTER_DOMAIN} ${CLUSTER_DOMAIN}\noptions ndots:5\n`,
  );
  // unshare and sh exec in turn: the child's pid is KEDA's, which stop() signals.
  const child: ChildProcess = spawn(
    'unshare',
    [
      '--mount',
      '--propagation=private',
      'sh',
      '-c',
      'mount --bind "$0" /etc/resolv.conf && exec "$@"',
      resolvConf,
      bin('keda'),
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
    // Its manager waits up to 30 s for its controllers to finish; nothing of it needs that here.
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(killer);
    },
    output: () => output,
    exitCode: () => child.exitCode,
  };
};
