import { installTideway } from '../../infra/install.ts';
import type { TestbedInfo } from '../../infra/testbed/types.ts';

/** Tideway's CRDs and namespace on the test bed (idempotent; every e2e file calls it). */
export const installCrds = (info: TestbedInfo): Promise<void> =>
  installTideway({ kubectl: info.kubectl, kubeconfig: info.kubeconfig, fieldManager: 'tideway-tests' });
