import type { ImageConfig } from '../image-table/image-config.ts';
import type { ImageStore } from '../image-table/store.ts';
import type { ClusterDnsConfig } from '../kubelet/etc-files.ts';
import type { PodNetwork } from '../network/types.ts';

/**
 * How an image the node does not hold as an archive maps to local programs (the image table):
 * its processes run from the machine's own file system, with the image's programs on PATH.
 */
export type ImageEntry = {
  /** Program names the image provides (as on its PATH) → absolute path on this machine. */
  readonly programs: Readonly<Record<string, string>>;
  /**
   * The image's config as its official build has it: CMD, WorkingDir and Env. Its ENTRYPOINT
   * (a script in the real image) is `entrypoint` below; `config.entrypoint` stays empty.
   */
  readonly config: ImageConfig;
  /**
   * What the image's ENTRYPOINT script does to CMD or the pod's args when the pod does not
   * override `command` (e.g. the redis image's adding --protected-mode no).
   */
  readonly entrypoint?: (argv: readonly string[]) => string[];
};

export type ImageTable = Readonly<Record<string, ImageEntry>>;

export type NodeAgentOptions = {
  kubeconfig: string;
  nodeName: string;
  network: PodNetwork;
  /** Root of pod directories (volumes, logs, pod roots); removed with the agent. */
  workDir: string;
  /** Marker set on every process the agent starts (see paths.ts TESTBED_ENV_MARKER). */
  testbedId: string;
  images: ImageTable;
  /** Images held as OCI archives; a pod's image found here runs from its own file system. */
  imageStore?: ImageStore;
  /**
   * How often the files of configMap, secret and downwardAPI volumes of running pods are brought
   * up to date with the API. Default 2000 ms, so tests see a change within seconds; kubelet takes
   * up to its sync period (1 min) plus the delay of its ConfigMap/Secret cache.
   */
  volumeRefreshMs?: number;
  /**
   * kubelet's --cluster-dns and --cluster-domain: ClusterFirst pods get this nameserver and the
   * cluster's search path. Without it they get the node's resolver, as kubelet falls back.
   */
  clusterDns?: ClusterDnsConfig;
};

export type NodeAgent = {
  readonly nodeName: string;
  /** Fault API: stop every container of the pod and keep them down (a lost node, for that pod). */
  holdDown(namespace: string, name: string): Promise<void>;
  /** Ends holdDown: containers start again as after a node comes back. */
  release(namespace: string, name: string): Promise<void>;
  /** Local processes of a pod's containers (for tests that kill one). */
  containerPids(namespace: string, name: string): ReadonlyMap<string, number>;
  /** Stops every container and the node heartbeat; pods stay in the API. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};
