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

/**
 * For tests: custom objects held in memory, by plural and name (one namespace), read and their
 * status replaced as CustomObjectsApi does; `api` to spread into a fake API.
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
