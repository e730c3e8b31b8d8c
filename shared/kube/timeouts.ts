import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

/** How long one Kubernetes API call may take, request to last byte of the answer. */
export const KUBE_CALL_TIMEOUT_MS = 10_000;

/** An API call got no (complete) answer in time: the API server or the way to it is stuck. */
export class KubeTimeoutError extends Error {
  override readonly name = 'KubeTimeoutError';
  readonly retry = true;
  readonly reason = 'KubeTimeout';
}

/**
 * The same KubeConfig (clusters, users, credentials and their caches are shared, nothing is
 * copied), but every API call made through a client it makes — `makeApiClient(...)` and
 * `KubernetesObjectApi.makeApiClient(...)` alike — gives up after `timeoutMs` with a
 * KubeTimeoutError, and at once with the signal's reason when `signal` aborts. Cheap: one per
 * handler run.
 *
 * How: client-node calls the KubeConfig's `applySecurityAuthentication` on every request of every
 * client made from it, right before sending; that is where the request gets its abort signal.
 * Watches and exec/port-forward streams go other ways and are not bounded.
 */
export const boundedKubeConfig = (
  kc: KubeConfig,
  o: { signal?: AbortSignal; timeoutMs?: number } = {},
): KubeConfig => {
  const timeoutMs = o.timeoutMs ?? KUBE_CALL_TIMEOUT_MS;
  const bounded = Object.create(kc) as KubeConfig;
  bounded.applySecurityAuthentication = async (request: RequestContext) => {
    const timer = new AbortController();
    const t = setTimeout(
      () =>
        timer.abort(
          new KubeTimeoutError(
            `${request.getHttpMethod()} ${new URL(request.getUrl()).pathname}: no answer from the API server in ${timeoutMs} ms`,
          ),
        ),
      timeoutMs,
    );
    t.unref();
    request.setSignal(o.signal ? AbortSignal.any([o.signal, timer.signal]) : timer.signal);
    await kc.applySecurityAuthentication(request);
  };
  return bounded;
};
