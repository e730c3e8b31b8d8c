import { join } from 'node:path';
import { bin } from '../paths.ts';
import { type ManagedProcess, startProcess, waitReady } from '../process/managed-process.ts';
import type { Pki } from './pki.ts';

type ComponentOptions = { dir: string; testbedId: string; kubeconfig: string };

/**
 * The real kube-controller-manager: StatefulSet, ReplicaSet, EndpointSlice, garbage collector,
 * PV binder, node lifecycle, namespace controllers. No node IPAM: the node agent sets podCIDR.
 */
export const startControllerManager = async (
  o: ComponentOptions & { pki: Pki; clusterCidr: string; serviceCidr: string },
): Promise<ManagedProcess> => {
  const proc = startProcess({
    name: 'kube-controller-manager',
    command: bin('kube-controller-manager'),
    args: [
      `--kubeconfig=${o.kubeconfig}`,
      `--authentication-kubeconfig=${o.kubeconfig}`,
      `--authorization-kubeconfig=${o.kubeconfig}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--leader-elect=false',
      `--service-account-private-key-file=${o.pki.saKey}`,
      `--root-ca-file=${o.pki.caCert}`,
      `--cluster-cidr=${o.clusterCidr}`,
      `--service-cluster-ip-range=${o.serviceCidr}`,
      '--use-service-account-credentials=false',
      // Quick reactions on a one-node bed: GC and namespace deletion should not lag tests.
      '--concurrent-gc-syncs=5',
      '--v=1',
    ],
    logFile: join(o.dir, 'kube-controller-manager.log'),
    testbedId: o.testbedId,
  });
  // It has no health port here (secure-port=0); "started" is the readiness we can observe.
  await waitReady(proc, async () => true, { timeoutMs: 5_000 });
  return proc;
};

export const startScheduler = async (o: ComponentOptions): Promise<ManagedProcess> => {
  const proc = startProcess({
    name: 'kube-scheduler',
    command: bin('kube-scheduler'),
    args: [
      `--kubeconfig=${o.kubeconfig}`,
      `--authentication-kubeconfig=${o.kubeconfig}`,
      `--authorization-kubeconfig=${o.kubeconfig}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--leader-elect=false',
      '--v=1',
    ],
    logFile: join(o.dir, 'kube-scheduler.log'),
    testbedId: o.testbedId,
  });
  await waitReady(proc, async () => true, { timeoutMs: 5_000 });
  return proc;
};
