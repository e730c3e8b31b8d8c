import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
} from '@kubernetes/client-node';
import { inject } from 'vitest';
import { controlClient } from '../../infra/testbed/control-api.ts';

export { sleep, until } from '../../infra/testbed/wait.ts';

/** The running test bed (started once by the global setup) and clients for it. */
export const bed = () => {
  const info = inject('testbed');
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfig);
  const kubectlIn = (input: string, ...args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = execFile(
        info.kubectl,
        args,
        { env: { ...process.env, KUBECONFIG: info.kubeconfig } },
        (error, stdout, stderr) => (error ? reject(Object.assign(error, { stderr })) : resolve(stdout)),
      );
      child.stdin?.end(input);
    });
  return {
    info,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    apiext: kc.makeApiClient(ApiextensionsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    discovery: kc.makeApiClient(DiscoveryV1Api),
    faults: controlClient(info),
    /** kubectl with `input` on stdin. */
    kubectlIn,
    /** A Tideway object applied as a user would: kubectl, server-side, the user's field manager. */
    applyTideway: (kind: string, namespace: string, name: string, spec: Record<string, unknown>) =>
      kubectlIn(
        JSON.stringify({ apiVersion: 'tideway.dev/v1alpha1', kind, metadata: { name, namespace }, spec }),
        'apply',
        '--server-side',
        '--field-manager=test-user',
        '-f',
        '-',
      ),
    kubectl: async (...args: string[]) =>
      (
        await promisify(execFile)(info.kubectl, args, {
          env: { ...process.env, KUBECONFIG: info.kubeconfig },
        })
      ).stdout,
  };
};

/** A namespace per test file, deleted afterwards, so tests do not see each other's objects. */
export const createNamespace = async (core: CoreV1Api, prefix: string): Promise<string> => {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 7)}`;
  await core.createNamespace({ body: { metadata: { name } } });
  return name;
};
