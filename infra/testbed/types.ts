import type { Component } from './process/component.ts';

/** What a test or `npm start` needs to reach the test bed; serializable (crosses to test workers). */
export type TestbedInfo = {
  readonly id: string;
  readonly dir: string;
  readonly kubeconfig: string;
  readonly apiServerUrl: string;
  readonly kubectl: string;
  readonly natsUrl: string;
  readonly s3: {
    readonly endpoint: string;
    readonly region: string;
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    readonly bucket: string;
  };
  readonly redisUrl: string;
  readonly network: { readonly hostIp: string; readonly podCidr: string; readonly serviceCidr: string };
  readonly nodeName: string;
  /** Base URL of the fault/control API (see control-api.ts); requests carry `controlToken`. */
  readonly controlUrl: string;
  readonly controlToken: string;
};

export type ComponentName =
  | 'etcd'
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kube-proxy'
  | 'nats'
  | 's3'
  | 'redis';

/** Faults a test can inject. A k3s provider would implement the same through its own means. */
export type Faults = {
  /** Stop a pod's containers and keep them down (a lost node, for that pod). */
  holdDownPod(namespace: string, name: string): Promise<void>;
  /** The node comes back: volumes set up again, init containers run again, then the others. */
  releasePod(namespace: string, name: string): Promise<void>;
  /** Kill one container process of a pod (SIGKILL), as a crash. */
  killContainer(namespace: string, name: string, container?: string): Promise<void>;
  /** Host pids of the pod's running containers, by container name. */
  containerPids(namespace: string, name: string): Record<string, number>;
  component(name: ComponentName): Component;
};

export type Testbed = TestbedInfo & {
  readonly faults: Faults;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};
