import type { ManagedProcess } from '../process/managed-process.ts';

/** A pod's network namespace on the test bed's bridge. */
export type PodNetns = {
  /** `ip netns` name, `${prefix}-…`. */
  readonly name: string;
  /** Path usable with `nsenter --net=` and setns(2). */
  readonly path: string;
  /** The pod IP, from the pod CIDR. */
  readonly ip: string;
};

/**
 * The pod network of the test bed: a bridge whose address is the node's InternalIP (the API
 * server binds there), one network namespace per pod attached by a veth pair, the pod and
 * service ranges routed to the bridge, and FORWARD guard rules so no packet from or to the
 * bridge can reach any other interface.
 */
export type PodNetwork = {
  readonly bridge: string;
  /** The bridge's address: node InternalIP, API server bind and advertise address. */
  readonly hostIp: string;
  /** e.g. 10.244.0.0/24 (the node's podCIDR). */
  readonly podCidr: string;
  /** e.g. 10.96.0.0/24 (the API server's --service-cluster-ip-range). */
  readonly serviceCidr: string;
  /** Creates the namespace `${prefix}-${id}` with lo up, a veth on the bridge and a default route. */
  attachPod(id: string): Promise<PodNetns>;
  /** Removes the namespace and its veth; idempotent. */
  detachPod(id: string): Promise<void>;
  /** Removes everything setupPodNetwork created and restores the sysctls it changed; idempotent. */
  close(): Promise<void>;
};

export type KubeProxy = {
  /** The kube-proxy process (for fault tests: kill/restart). */
  readonly process: ManagedProcess;
  /** Stops the process and removes every iptables chain, rule and sysctl it left. */
  stop(): Promise<void>;
};
