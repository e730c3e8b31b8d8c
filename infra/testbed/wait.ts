import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` returns a value other than undefined, or throws with `what` after timeout. */
export const until = async <T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  intervalMs = 200,
) => {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
};

export const waitForNodeReady = async (kubeconfig: string, nodeName: string): Promise<void> => {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await until(`node ${nodeName} Ready`, async () => {
    const node = await core.readNode({ name: nodeName });
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
  });
};
