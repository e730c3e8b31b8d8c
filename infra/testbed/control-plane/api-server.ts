import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { bin } from '../paths.ts';
import { type ManagedProcess, startProcess, waitReady } from '../process/managed-process.ts';
import type { Pki } from './pki.ts';

export type ApiServer = { readonly url: string; readonly process: ManagedProcess };

export type ApiServerOptions = {
  dir: string;
  testbedId: string;
  pki: Pki;
  etcdUrl: string;
  /** Bind and advertise address: the pod bridge's, so pods reach it via the `kubernetes` Service. */
  address: string;
  serviceCidr: string;
  port: number;
};

/** GET url with the admin client certificate; resolves the status code. */
export const adminGet = async (pki: Pki, url: string): Promise<number> => {
  const [ca, cert, key] = await Promise.all([
    readFile(pki.caCert),
    readFile(pki.adminCert),
    readFile(pki.adminKey),
  ]);
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, cert, key, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
};

export const startApiServer = async (o: ApiServerOptions): Promise<ApiServer> => {
  const port = o.port;
  const url = `https://${o.address}:${port}`;
  const proc = startProcess({
    name: 'kube-apiserver',
    command: bin('kube-apiserver'),
    args: [
      `--etcd-servers=${o.etcdUrl}`,
      `--bind-address=${o.address}`,
      `--advertise-address=${o.address}`,
      `--secure-port=${port}`,
      `--cert-dir=${join(o.dir, 'apiserver-certs')}`,
      `--tls-cert-file=${o.pki.servingCert}`,
      `--tls-private-key-file=${o.pki.servingKey}`,
      `--client-ca-file=${o.pki.caCert}`,
      `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
      `--service-account-key-file=${o.pki.saPub}`,
      `--service-account-signing-key-file=${o.pki.saKey}`,
      `--service-cluster-ip-range=${o.serviceCidr}`,
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--v=1',
    ],
    logFile: join(o.dir, 'kube-apiserver.log'),
    testbedId: o.testbedId,
  });
  await waitReady(proc, async () => (await adminGet(o.pki, `${url}/readyz`)) === 200, { timeoutMs: 60_000 });
  return { url, process: proc };
};
