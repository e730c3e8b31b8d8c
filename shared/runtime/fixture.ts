import type { CloudEvent } from 'cloudevents';
import type { HandlerContext } from './handler.ts';

/**
 * For tests: a function's context over an in-memory API (`api`: the client-node methods a test
 * serves, for every makeApiClient), with a fixed clock, no fencing, and the types of the events
 * it publishes.
 */
export const fakeHandlerContext = (
  api: object,
  o: { function: string; now: Date; attempt?: number; maxAttempts?: number; env?: Record<string, string> },
) => {
  const published: string[] = [];
  const ctx = {
    kube: { makeApiClient: () => api },
    function: o.function,
    attempt: o.attempt ?? 1,
    maxAttempts: o.maxAttempts ?? 1000,
    clock: () => o.now,
    fence: () => undefined,
    log: { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} },
    metrics: { inc: () => {}, observe: () => {}, set: () => {} },
    publisher: {
      publish: async (e: CloudEvent<unknown>) => {
        published.push(e.type);
        return { duplicate: false, seq: 1 };
      },
    },
    signal: new AbortController().signal,
    env: o.env ?? {},
  } as unknown as HandlerContext;
  return { ctx, published };
};

export const notFound = () => Object.assign(new Error('not found'), { code: 404 });

/** RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces. */
const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
};

/**
 * For tests: custom objects held in memory, by plural and name (one namespace), read, listed,
 * merge-patched (a uid in the patch is a precondition) and their status replaced as
 * CustomObjectsApi does; `api` to spread into a fake API.
 */
export const memoryCustomObjects = () => {
  const objects = new Map<string, Record<string, unknown>>();
  return {
    put: (plural: string, obj: { metadata: { name: string } }) =>
      objects.set(`${plural}/${obj.metadata.name}`, structuredClone(obj) as Record<string, unknown>),
    get: (plural: string, name: string) => objects.get(`${plural}/${name}`),
    api: {
      getNamespacedCustomObject: async (a: { plural: string; name: string }) => {
        const obj = objects.get(`${a.plural}/${a.name}`);
        if (!obj) throw notFound();
        return structuredClone(obj);
      },
      listNamespacedCustomObject: async (a: { plural: string }) => ({
        items: [...objects.entries()]
          .filter(([k]) => k.startsWith(`${a.plural}/`))
          .map(([, o]) => structuredClone(o)),
      }),
      patchNamespacedCustomObject: async (a: {
        plural: string;
        name: string;
        body: { metadata?: { uid?: string } };
      }) => {
        const obj = objects.get(`${a.plural}/${a.name}`) as { metadata: { uid?: string } } | undefined;
        if (!obj) throw notFound();
        const uid = a.body.metadata?.uid;
        if (uid !== undefined && uid !== obj.metadata.uid)
          throw Object.assign(new Error('Precondition failed: UID in precondition'), { code: 409 });
        const next = mergePatch(obj, a.body) as Record<string, unknown>;
        objects.set(`${a.plural}/${a.name}`, next);
        return structuredClone(next);
      },
      replaceNamespacedCustomObjectStatus: async (a: {
        plural: string;
        name: string;
        body: Record<string, unknown>;
      }) => {
        objects.set(`${a.plural}/${a.name}`, structuredClone(a.body));
        return a.body;
      },
    },
  };
};
