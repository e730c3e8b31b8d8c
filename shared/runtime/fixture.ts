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

type Meta = {
  uid?: string;
  resourceVersion?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  annotations?: Record<string, string>;
};
type Stored = Record<string, unknown> & { metadata: Meta };

const conflict = (what: string) =>
  Object.assign(new Error(`Operation cannot be fulfilled: ${what}`), { code: 409 });

/**
 * For tests: custom objects held in memory, by plural and name (one namespace), as the API server
 * keeps them: read, listed, merge-patched and their status replaced, each write a new
 * resourceVersion; a uid or resourceVersion in the body is a precondition (409), a status write
 * changes the status only, and an object being deleted goes with its last finalizer. `api` to
 * spread into a fake API.
 */
export const memoryCustomObjects = () => {
  const objects = new Map<string, Stored>();
  let version = 1000;
  const keyOf = (plural: string, name: string) => `${plural}/${name}`;
  const stored = (plural: string, name: string) => {
    const obj = objects.get(keyOf(plural, name));
    if (!obj) throw notFound();
    return obj;
  };
  const check = (obj: Stored, body: { metadata?: Meta }) => {
    const m = body.metadata;
    if (m?.uid !== undefined && m.uid !== obj.metadata.uid) throw conflict('UID in precondition');
    if (m?.resourceVersion !== undefined && m.resourceVersion !== obj.metadata.resourceVersion)
      throw conflict('the object has been modified; please apply your changes to the latest version');
  };
  const write = (plural: string, name: string, next: Stored) => {
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      objects.delete(keyOf(plural, name));
      return structuredClone(next);
    }
    next.metadata = { ...next.metadata, resourceVersion: String(++version) };
    objects.set(keyOf(plural, name), next);
    return structuredClone(next);
  };
  return {
    put: (plural: string, obj: { metadata: { name: string } }) =>
      objects.set(keyOf(plural, obj.metadata.name), structuredClone(obj) as unknown as Stored),
    get: (plural: string, name: string) =>
      objects.get(keyOf(plural, name)) as Record<string, unknown> | undefined,
    api: {
      getNamespacedCustomObject: async (a: { plural: string; name: string }) =>
        structuredClone(stored(a.plural, a.name)),
      listNamespacedCustomObject: async (a: { plural: string }) => ({
        items: [...objects.entries()]
          .filter(([k]) => k.startsWith(`${a.plural}/`))
          .map(([, o]) => structuredClone(o)),
      }),
      patchNamespacedCustomObject: async (a: { plural: string; name: string; body: { metadata?: Meta } }) => {
        const obj = stored(a.plural, a.name);
        check(obj, a.body);
        return write(a.plural, a.name, mergePatch(obj, a.body) as Stored);
      },
      replaceNamespacedCustomObjectStatus: async (a: {
        plural: string;
        name: string;
        body: { metadata?: Meta; status?: unknown };
      }) => {
        const obj = stored(a.plural, a.name);
        check(obj, a.body);
        return write(a.plural, a.name, { ...structuredClone(obj), status: structuredClone(a.body.status) });
      },
    },
  };
};
