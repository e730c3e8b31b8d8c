import { isConflict, isNotFound } from '../../shared/kube/errors.ts';
import type { KubeHttp } from '../../shared/kube/lite/http.ts';
import type { Logger } from '../../shared/runtime/logger.ts';

type Lease = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
};

/** MicroTime: the API refuses Lease times without microseconds. */
const microTime = (d: Date) => d.toISOString().replace(/Z$/, '000Z');

export type LeaderOptions = {
  namespace: string;
  name: string;
  identity: string;
  durationMs?: number;
  /** How often a standby looks at the Lease. */
  retryMs?: number;
  log: Logger;
  onStartedLeading(): void | Promise<void>;
  /** Runs when the lease is lost or released; work must stop before the lease could be taken. */
  onStoppedLeading(): void | Promise<void>;
};

/**
 * Leader election on a coordination.k8s.io Lease, as client-go does it: whoever holds an unexpired
 * Lease leads; the leader renews every duration/3 with a compare-and-swap on resourceVersion and
 * steps down when it could not renew within 2/3 of the duration, before anyone may take over.
 * Expiry is judged by the standby's own clock (when it last saw the Lease change), so clock skew
 * between machines does not matter. A graceful stop releases the Lease for an instant hand-over.
 */
export const electLeader = (http: KubeHttp, o: LeaderOptions) => {
  const leases = `/apis/coordination.k8s.io/v1/namespaces/${o.namespace}/leases`;
  const api = {
    read: () => http.request<Lease>('GET', `${leases}/${o.name}`),
    create: (spec: Lease['spec']) =>
      http.request<Lease>('POST', leases, {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: o.name, namespace: o.namespace },
          spec,
        },
      }),
    replace: (lease: Lease) => http.request<Lease>('PUT', `${leases}/${o.name}`, { body: lease }),
  };
  const durationMs = o.durationMs ?? 15_000;
  // client-go's 2 s against a 15 s lease; shorter leases look more often.
  const retryMs = o.retryMs ?? Math.min(2000, durationMs / 3);
  const renewDeadlineMs = (durationMs * 2) / 3;
  let leading = false;
  let stopped = false;
  let lastRenew = 0;
  let observed: { rv: string; at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;

  const spec = (lease: Lease | undefined, now: Date) => ({
    holderIdentity: o.identity,
    leaseDurationSeconds: Math.ceil(durationMs / 1000),
    renewTime: microTime(now),
    acquireTime: leading ? (lease?.spec?.acquireTime ?? microTime(now)) : microTime(now),
    leaseTransitions:
      (lease?.spec?.leaseTransitions ?? 0) + (lease?.spec?.holderIdentity === o.identity ? 0 : 1),
  });

  const tryAcquireOrRenew = async (): Promise<boolean> => {
    const now = new Date();
    let lease: Lease | undefined;
    try {
      lease = await api.read();
    } catch (error) {
      if (!isNotFound(error)) throw error;
      try {
        await api.create(spec(undefined, now));
        return true;
      } catch (e) {
        if (isConflict(e)) return false; // another replica created it first
        throw e;
      }
    }
    const rv = lease.metadata?.resourceVersion ?? '';
    if (observed?.rv !== rv) observed = { rv, at: Date.now() };
    const holder = lease.spec?.holderIdentity ?? '';
    const leaseMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
    const expired = holder === '' || Date.now() - observed.at > leaseMs;
    if (holder !== o.identity && !expired) return false;
    try {
      const updated = await api.replace({ ...lease, spec: spec(lease, now) });
      observed = { rv: updated.metadata?.resourceVersion ?? '', at: Date.now() };
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  };

  const loop = async () => {
    while (!stopped) {
      let ok = false;
      try {
        ok = await tryAcquireOrRenew();
      } catch (error) {
        o.log.warn('lease request failed', { lease: `${o.namespace}/${o.name}`, error });
      }
      if (stopped) break;
      if (ok) {
        lastRenew = Date.now();
        if (!leading) {
          leading = true;
          o.log.info('became leader', { lease: `${o.namespace}/${o.name}`, identity: o.identity });
          await o.onStartedLeading();
        }
      } else if (leading && Date.now() - lastRenew > renewDeadlineMs) {
        leading = false;
        o.log.warn('lost leadership: could not renew in time', { identity: o.identity });
        await o.onStoppedLeading();
      }
      await new Promise<void>((r) => {
        timer = setTimeout(r, leading ? durationMs / 3 : retryMs);
        wake = r;
      });
    }
  };
  const done = loop();

  return {
    isLeader: () => leading,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await done;
      if (!leading) return;
      leading = false;
      await o.onStoppedLeading();
      // Release: an empty holder lets a standby take over on its next look, not after expiry.
      try {
        const lease = await api.read();
        if (lease.spec?.holderIdentity === o.identity)
          await api.replace({
            ...lease,
            spec: {
              ...lease.spec,
              holderIdentity: '',
              leaseDurationSeconds: 1,
              renewTime: microTime(new Date()),
            },
          });
      } catch (error) {
        o.log.warn('could not release the lease', { error });
      }
    },
  };
};
