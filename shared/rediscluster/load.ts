import { CustomObjectsApi } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { type RedisCluster, zRedisCluster } from '../api/generated.ts';
import { isNotFound } from '../kube/errors.ts';
import { TIDEWAY_KINDS } from '../kube/resources.ts';
import { updateStatus } from '../kube/status.ts';
import { done, type HandlerContext, type Outcome, terminal } from '../runtime/handler.ts';

const RDC = TIDEWAY_KINDS.RedisCluster;
type Status = NonNullable<RedisCluster['status']>;

export type LoadedCluster = {
  rc: RedisCluster;
  key: { namespace: string; name: string };
  /** For Events about the cluster. */
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  /**
   * Read-modify-write of the status; `mutate` sees the freshest status and returns the next one,
   * or undefined to write nothing (also a compare-and-set: decide on what is really there).
   */
  writeStatus: (mutate: (s: Status) => Status | undefined) => Promise<RedisCluster | undefined>;
};

/**
 * The RedisCluster an event is about, freshly read and validated — events only name objects — or
 * the outcome when there is none to act on (gone: done; not valid: terminal, with the problems).
 */
export const loadCluster = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<LoadedCluster | Outcome> => {
  const e = event as unknown as Record<string, string | undefined>;
  if (e.kind !== 'RedisCluster' || !e.namespace || !e.name) return done;
  const custom = ctx.kube.makeApiClient(CustomObjectsApi);
  const key = { namespace: e.namespace, name: e.name };
  let raw: unknown;
  try {
    raw = await custom.getNamespacedCustomObject({ ...RDC, ...key });
  } catch (error) {
    if (isNotFound(error)) return done; // gone: its owned objects go with it
    throw error;
  }
  const parsed = zRedisCluster.safeParse(raw);
  if (!parsed.success)
    return terminal(
      'InvalidSpec',
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const rc = parsed.data;
  return {
    rc,
    key,
    regarding: { apiVersion: rc.apiVersion, kind: rc.kind, ...key, uid: rc.metadata.uid ?? '' },
    writeStatus: (mutate) =>
      updateStatus<RedisCluster>(custom, RDC, key, (o) => {
        const next = mutate({ ...(o.status ?? {}) });
        return next === undefined || JSON.stringify(next) === JSON.stringify(o.status ?? {})
          ? undefined
          : next;
      }),
  };
};

export const isOutcome = (x: LoadedCluster | Outcome): x is Outcome => !('rc' in x);
