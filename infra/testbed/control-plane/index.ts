import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Component, component } from '../process/component.ts';
import { freePort } from '../process/ports.ts';
import { startApiServer } from './api-server.ts';
import { startControllerManager, startScheduler } from './controllers.ts';
import { etcdPorts, startEtcd } from './etcd.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { createPki, type Pki } from './pki.ts';

export type ControlPlaneOptions = {
  dir: string;
  testbedId: string;
  /** Bind and advertise address of the API server (the pod bridge's address). */
  address: string;
  serviceCidr: string;
  clusterCidr: string;
};

export type ControlPlane = {
  readonly url: string;
  /** Admin kubeconfig (client certificate in system:masters). */
  readonly kubeconfig: string;
  readonly pki: Pki;
  readonly etcd: Component;
  readonly apiServer: Component;
  readonly controllerManager: Component;
  readonly scheduler: Component;
  stop(): Promise<void>;
};

/** The first address of a CIDR plus one: the `kubernetes` Service's ClusterIP. */
const firstServiceIp = (cidr: string): string => {
  const [base] = cidr.split('/');
  const parts = (base ?? '').split('.').map(Number);
  parts[3] = (parts[3] ?? 0) + 1;
  return parts.join('.');
};

export const startControlPlane = async (o: ControlPlaneOptions): Promise<ControlPlane> => {
  const dir = join(o.dir, 'control-plane');
  await mkdir(join(dir, 'pki'), { recursive: true });
  const pki = await createPki({
    dir: join(dir, 'pki'),
    ips: ['127.0.0.1', o.address, firstServiceIp(o.serviceCidr)],
  });
  const ports = await etcdPorts();
  const apiPort = await freePort(o.address);
  const etcdUrl = `http://127.0.0.1:${ports.clientPort}`;
  const url = `https://${o.address}:${apiPort}`;
  const kubeconfig = join(dir, 'admin.kubeconfig');
  await writeKubeconfig(kubeconfig, {
    server: url,
    caCert: pki.caCert,
    clientCert: pki.adminCert,
    clientKey: pki.adminKey,
    user: 'tideway-admin',
  });

  const base = { dir, testbedId: o.testbedId };
  const etcd = component('etcd', async () => (await startEtcd({ ...base, ...ports })).process);
  const apiServer = component(
    'kube-apiserver',
    async () =>
      (
        await startApiServer({
          ...base,
          pki,
          etcdUrl,
          address: o.address,
          serviceCidr: o.serviceCidr,
          port: apiPort,
        })
      ).process,
  );
  const controllerManager = component('kube-controller-manager', () =>
    startControllerManager({
      ...base,
      kubeconfig,
      pki,
      clusterCidr: o.clusterCidr,
      serviceCidr: o.serviceCidr,
    }),
  );
  const scheduler = component('kube-scheduler', () => startScheduler({ ...base, kubeconfig }));

  const all = [etcd, apiServer, controllerManager, scheduler];
  // At the end the whole control plane is thrown away: a component that is still finishing its
  // graceful shutdown after 3 s is killed (measured: one took the full 10 s after a chart install,
  // which made npm start -- --chart miss its 15 s stop).
  const stop = async () => {
    for (const c of [...all].reverse()) await c.stop(3000);
  };
  try {
    await etcd.start();
    await apiServer.start();
    await Promise.all([controllerManager.start(), scheduler.start()]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, kubeconfig, pki, etcd, apiServer, controllerManager, scheduler, stop };
};
