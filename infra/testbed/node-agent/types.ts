import type { PodNetwork } from '../network/types.ts';

/** How a container image maps to local programs (no container runtime on these machines). */
export type ImageEntry = {
  /** Program names the image provides (as on its PATH) → absolute path on this machine. */
  readonly programs: Readonly<Record<string, string>>;
  /** The image's default command when the pod gives neither command nor args (ENTRYPOINT+CMD). */
  readonly defaultCommand: readonly string[];
  /**
   * What the image's ENTRYPOINT script does to the command when the pod does not override
   * `command` (e.g. the redis image adds --protected-mode no).
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
  /**
   * How often the files of configMap, secret and downwardAPI volumes of running pods are brought
   * up to date with the API. Default 2000 ms, so tests see a change within seconds; kubelet takes
   * up to its sync period (1 min) plus the delay of its ConfigMap/Secret cache.
   */
  volumeRefreshMs?: number;
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
