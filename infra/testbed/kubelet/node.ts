import { CoordinationV1Api, CoreV1Api, type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../../shared/kube/errors.ts';

const LEASE_NS = 'kube-node-lease';

/**
 * Registers the Node and keeps it alive the way kubelet does: Ready condition heartbeats in its
 * status and a renewed Lease in kube-node-lease; without both, the node-lifecycle controller
 * taints the node and evicts its pods.
 */
export const startNodeHeartbeat = async (
  kc: KubeConfig,
  o: { nodeName: string; hostIp: string; podCidr: string },
) => {
  const core = kc.makeApiClient(CoreV1Api);
  const coord = kc.makeApiClient(CoordinationV1Api);
  const name = o.nodeName;
  const labels = {
    'kubernetes.io/hostname': name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': 'tideway-testbed',
  };
  await core
    .createNode({ body: { metadata: { name, labels }, spec: { podCIDR: o.podCidr, podCIDRs: [o.podCidr] } } })
    .catch((e) => {
      if (!String(e).includes('409') && !String((e as { code?: number }).code).includes('409')) throw e;
    });

  // Controllers (node-lifecycle, the scheduler's taint manager) also write the Node, so a
  // read-modify-write can lose a race: read again and retry, as kubelet does.
  const writeStatus = async (attempts = 5): Promise<void> => {
    try {
      await writeStatusOnce();
    } catch (error) {
      if (!isConflict(error) || attempts <= 1) throw error;
      await writeStatus(attempts - 1);
    }
  };
  const writeStatusOnce = async () => {
    const node = await core.readNode({ name });
    const now = new Date();
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    const cond = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: type === 'Ready' && ready?.status === status ? ready.lastTransitionTime : now,
    });
    node.status = {
      ...node.status,
      addresses: [
        { type: 'InternalIP', address: o.hostIp },
        { type: 'Hostname', address: name },
      ],
      capacity: { cpu: '2', memory: '24Gi', pods: '110', 'ephemeral-storage': '50Gi' },
      allocatable: { cpu: '2', memory: '24Gi', pods: '110', 'ephemeral-storage': '50Gi' },
      conditions: [
        cond('Ready', 'True', 'KubeletReady', 'tideway test bed node agent is posting ready status'),
        cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory', ''),
        cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', ''),
        cond('PIDPressure', 'False', 'KubeletHasSufficientPID', ''),
      ],
      nodeInfo: {
        architecture: 'amd64',
        bootID: '',
        containerRuntimeVersion: 'tideway-testbed://1',
        kernelVersion: '',
        kubeProxyVersion: '',
        kubeletVersion: 'v1.35.4',
        machineID: '',
        operatingSystem: 'linux',
        osImage: 'tideway test bed',
        systemUUID: '',
      },
      daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    };
    await core.replaceNodeStatus({ name, body: node });
  };

  const renewLease = async () => {
    const body = {
      metadata: { name, namespace: LEASE_NS },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new V1MicroTime() },
    };
    try {
      const lease = await coord.readNamespacedLease({ name, namespace: LEASE_NS });
      lease.spec = { ...lease.spec, ...body.spec };
      await coord.replaceNamespacedLease({ name, namespace: LEASE_NS, body: lease });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await coord.createNamespacedLease({ namespace: LEASE_NS, body });
    }
  };

  await writeStatus();
  await renewLease().catch(() => undefined);
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped) return;
    // A missed beat is retried on the next one; the lease allows four.
    void writeStatus().catch(() => undefined);
    void renewLease().catch(() => undefined);
  }, 10_000);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
};
