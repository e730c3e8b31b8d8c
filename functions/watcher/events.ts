import { randomBytes } from 'node:crypto';
import { CloudEvent } from 'cloudevents';
import { DEFAULT_CLUSTER_KIND } from '../../shared/engines/index.ts';
import { eventId } from '../../shared/events/event-id.ts';
import { EventType } from '../../shared/events/types.ts';
import type { KubeObj, Watched } from './kinds.ts';

export const traceparent = () => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;

export type Change = { type: 'added' | 'updated' | 'deleted'; watched: Watched; obj: KubeObj };

/** Kinds that act on a cluster named in their spec (spec.cluster.name, spec.cluster.kind). */
const CLUSTER_SCOPED = new Set(['Backup', 'Restore']);

/**
 * The cluster a Backup or Restore acts on, for the `cluster` and `clusterkind` extensions: its
 * handler locks that cluster (lockKey), so it never runs beside the cluster's reconcile or health.
 */
const clusterOf = (kind: string, obj: KubeObj): { name: string; kind: string } | undefined => {
  if (!CLUSTER_SCOPED.has(kind)) return undefined;
  const ref = (obj.spec as { cluster?: { name?: unknown; kind?: unknown } } | undefined)?.cluster;
  if (typeof ref?.name !== 'string' || !ref.name) return undefined;
  return { name: ref.name, kind: typeof ref.kind === 'string' && ref.kind ? ref.kind : DEFAULT_CLUSTER_KIND };
};

/** A resource event: ids are deterministic, so a republished change is a JetStream duplicate. */
export const resourceEvent = (source: string, c: Change): CloudEvent<unknown> | undefined => {
  const about = c.watched.about(c.obj);
  const m = c.obj.metadata ?? {};
  if (!about) return undefined;
  const type = EventType[c.type];
  const own = c.watched.kind === about.kind;
  const cluster = own ? clusterOf(c.watched.kind, c.obj) : undefined;
  return new CloudEvent({
    specversion: '1.0',
    id:
      c.type === 'deleted'
        ? eventId(m.uid, 'deleted', c.watched.kind)
        : eventId(m.uid, m.resourceVersion, c.type, c.watched.kind),
    source,
    type,
    subject: `namespaces/${about.namespace}/${c.watched.plural}/${m.name}`,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    kind: about.kind,
    namespace: about.namespace,
    name: about.name,
    ...(own && m.uid ? { uid: m.uid } : {}),
    ...(own && m.generation !== undefined ? { generation: String(m.generation) } : {}),
    ...(m.resourceVersion ? { resourceversion: m.resourceVersion } : {}),
    ...(own ? {} : { cause: `${c.watched.kind}/${m.namespace}/${m.name}` }),
    ...(cluster ? { cluster: cluster.name, clusterkind: cluster.kind } : {}),
    traceparent: traceparent(),
    data: {
      kind: c.watched.kind,
      namespace: m.namespace,
      name: m.name,
      uid: m.uid,
      generation: m.generation,
      resourceVersion: m.resourceVersion,
      ...(c.type === 'deleted' ? { object: c.obj } : {}),
    },
  });
};

/** A tick: the watcher is the clock. One id per object and period (or scheduled time). */
export const tickEvent = (
  source: string,
  type: typeof EventType.healthTick | typeof EventType.scheduleTick | typeof EventType.retentionTick,
  kind: string,
  obj: KubeObj,
  slot: string,
  data: Record<string, unknown> = {},
): CloudEvent<unknown> => {
  const m = obj.metadata ?? {};
  return new CloudEvent({
    specversion: '1.0',
    id: eventId(type, m.uid, slot),
    source,
    type,
    subject: `namespaces/${m.namespace}/${kind.toLowerCase()}s/${m.name}`,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    kind,
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    ...(m.uid ? { uid: m.uid } : {}),
    traceparent: traceparent(),
    data: { kind, namespace: m.namespace, name: m.name, uid: m.uid, ...data },
  });
};
