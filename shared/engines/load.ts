import { CustomObjectsApi } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import type { z } from 'zod';
import { isNotFound } from '../kube/errors.ts';
import type { ResourceType } from '../kube/resources.ts';
import { type KubeObject, updateStatus } from '../kube/status.ts';
import { done, type HandlerContext, type Outcome, terminal } from '../runtime/handler.ts';

type Obj = { apiVersion: string; kind: string; metadata: { uid?: string; name?: string }; status?: unknown };

export type Loaded<T extends Obj> = {
  obj: T;
  key: { namespace: string; name: string };
  /** For Events about the object. */
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  /**
   * Read-modify-write of the status; `mutate` sees the freshest status and returns the next one,
   * or undefined to write nothing (also a compare-and-set: decide on what is really there).
   */
  writeStatus: (mutate: (s: NonNullable<T['status']>) => T['status'] | undefined) => Promise<T | undefined>;
};

/**
 * The object of `type` an event is about, freshly read and validated — events only name objects —
 * or the outcome when there is none to act on (another kind or gone: done; not valid: terminal,
 * with the problems).
 */
export const loadObject = async <S extends z.ZodType<Obj>>(
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
  type: ResourceType,
  schema: S,
): Promise<Loaded<z.infer<S>> | Outcome> => {
  type T = z.infer<S>;
  const e = event as unknown as Record<string, string | undefined>;
  if (e.kind !== type.kind || !e.namespace || !e.name) return done;
  const custom = ctx.kube.makeApiClient(CustomObjectsApi);
  const key = { namespace: e.namespace, name: e.name };
  let raw: unknown;
  try {
    raw = await custom.getNamespacedCustomObject({ ...type, ...key });
  } catch (error) {
    if (isNotFound(error)) return done; // gone: what it owns goes with it
    throw error;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    return terminal(
      'InvalidSpec',
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const obj = parsed.data as T;
  return {
    obj,
    key,
    regarding: { apiVersion: obj.apiVersion, kind: obj.kind, ...key, uid: obj.metadata.uid ?? '' },
    writeStatus: (mutate) =>
      updateStatus<T & KubeObject>(custom, type, key, (o) => {
        const next = mutate({ ...((o.status ?? {}) as NonNullable<T['status']>) });
        return next === undefined || JSON.stringify(next) === JSON.stringify(o.status ?? {})
          ? undefined
          : (next as Record<string, unknown>);
      }) as Promise<T | undefined>,
  };
};

export const isOutcome = <T extends Obj>(x: Loaded<T> | Outcome): x is Outcome => !('obj' in x);
