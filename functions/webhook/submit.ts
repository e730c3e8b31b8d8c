import { zBackup, zRedisCluster, zRestore } from '../../shared/api/generated.ts';
import { clusterRefOf } from '../../shared/backup/cluster-ref.ts';
import { pickLatest } from '../../shared/backup/latest.ts';
import { TIDEWAY_GROUP, TIDEWAY_VERSION } from '../../shared/kube/resources.ts';
import { describeRunning, isActive } from '../../shared/restore/ended.ts';
import { WebhookError } from './errors.ts';
import { fingerprintOf, type Intent, objectNameOf } from './intent.ts';
import type { Kind, WebhookKube } from './kube.ts';
import type { Mutex } from './mutex.ts';
import type { CloudEventMeta } from './request.ts';

/** Who and what asked: recorded on the object, so kubectl shows where an intent came from. */
export type Requester = {
  readonly webhookId: string;
  /** The TCP peer's address. */
  readonly peer: string;
  readonly userAgent?: string;
  readonly receivedAt: Date;
  readonly cloudEvent?: CloudEventMeta;
};

export const ANNOTATIONS = {
  requestedBy: 'tideway.dev/requested-by',
  webhookId: 'tideway.dev/webhook-id',
  peer: 'tideway.dev/webhook-peer',
  userAgent: 'tideway.dev/webhook-user-agent',
  receivedAt: 'tideway.dev/webhook-received-at',
  fingerprint: 'tideway.dev/webhook-request-sha256',
  ceId: 'tideway.dev/cloudevent-id',
  ceSource: 'tideway.dev/cloudevent-source',
  ceType: 'tideway.dev/cloudevent-type',
  ceSubject: 'tideway.dev/cloudevent-subject',
} as const;
/** Label on every object the webhook makes: `kubectl get restores -l tideway.dev/requested-by=webhook`. */
export const REQUESTED_BY_LABEL = 'tideway.dev/requested-by';

export type Submitted = {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
  /** True when the webhook-id had made this object before and nothing was created now. */
  readonly replayed: boolean;
};

const printable = (s: string, max: number) => s.replace(/[\p{Cc}\p{Cf}]/gu, '').slice(0, max);

const annotationsOf = (r: Requester, fingerprint: string): Record<string, string> => ({
  [ANNOTATIONS.requestedBy]: 'webhook',
  [ANNOTATIONS.webhookId]: r.webhookId,
  [ANNOTATIONS.peer]: r.peer,
  [ANNOTATIONS.receivedAt]: r.receivedAt.toISOString(),
  [ANNOTATIONS.fingerprint]: fingerprint,
  ...(r.userAgent ? { [ANNOTATIONS.userAgent]: printable(r.userAgent, 256) } : {}),
  ...(r.cloudEvent
    ? {
        [ANNOTATIONS.ceId]: printable(r.cloudEvent.id, 256),
        [ANNOTATIONS.ceSource]: printable(r.cloudEvent.source, 1024),
        [ANNOTATIONS.ceType]: r.cloudEvent.type,
        ...(r.cloudEvent.subject ? { [ANNOTATIONS.ceSubject]: printable(r.cloudEvent.subject, 1024) } : {}),
      }
    : {}),
});

const objectOf = (intent: Intent, name: string, r: Requester, fingerprint: string) => ({
  apiVersion: `${TIDEWAY_GROUP}/${TIDEWAY_VERSION}`,
  kind: intent.kind,
  metadata: {
    name,
    namespace: intent.namespace,
    labels: { [REQUESTED_BY_LABEL]: 'webhook' },
    annotations: annotationsOf(r, fingerprint),
  },
  spec:
    intent.kind === 'Restore'
      ? { cluster: { name: intent.cluster }, source: intent.source }
      : { cluster: { name: intent.cluster } },
});

const annotationOf = (o: unknown, key: string) =>
  (o as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata?.annotations?.[key];

/**
 * Turns a verified request into a Restore or Backup object, once per webhook-id:
 * replay check → the cluster (and backup) exist → no restore of the cluster running → create.
 * A restore's replay and "none running" checks are repeated with its create under a lock per
 * cluster, so two requests (on any replicas) cannot both pass "none running".
 */
export const submit = async (
  intent: Intent,
  requester: Requester,
  deps: { kube: WebhookKube; mutex: Mutex },
): Promise<Submitted> => {
  const { kube } = deps;
  const ns = intent.namespace;
  const name = objectNameOf(ns, requester.webhookId);
  const fingerprint = fingerprintOf(intent);
  const made = (replayed: boolean): Submitted => ({ kind: intent.kind, namespace: ns, name, replayed });

  /** What this webhook-id made before, if anything; the same request, or it is refused. */
  const previous = async (): Promise<Submitted | undefined> => {
    for (const kind of intent.kind === 'Restore'
      ? (['Restore', 'Backup'] as const)
      : (['Backup', 'Restore'] as const)) {
      const o = await kube.get(kind, ns, name);
      if (o === undefined) continue;
      if (kind === intent.kind && annotationOf(o, ANNOTATIONS.fingerprint) === fingerprint) return made(true);
      throw new WebhookError(
        'WebhookIdReused',
        `webhook-id ${requester.webhookId} was used before for another request (${kind} ${name}); give a new request a new id`,
      );
    }
    return undefined;
  };

  const checkCluster = async () => {
    const raw = await kube.get('RedisCluster', ns, intent.cluster);
    if (raw === undefined)
      throw new WebhookError('ClusterNotFound', `no RedisCluster ${intent.cluster} in namespace ${ns}`);
    const cluster = zRedisCluster.safeParse(raw);
    if (cluster.success && cluster.data.metadata.deletionTimestamp)
      throw new WebhookError('ClusterDeleting', `RedisCluster ${intent.cluster} is being deleted`);
    return cluster.success ? cluster.data : undefined;
  };

  const checkSource = async () => {
    if (intent.kind !== 'Restore') return;
    if ('backup' in intent.source) {
      const b = intent.source.backup.name;
      const raw = await kube.get('Backup', ns, b);
      if (raw === undefined) throw new WebhookError('BackupNotFound', `no Backup ${b} in namespace ${ns}`);
      const parsed = zBackup.safeParse(raw).data;
      const of = parsed && clusterRefOf(parsed.spec);
      if (of && of.kind !== 'RedisCluster')
        throw new WebhookError(
          'WrongClusterKind',
          `Backup ${b} is a backup of ${of.kind} ${of.name}; a restore loads RedisCluster backups only`,
        );
      const phase = parsed?.status?.phase;
      if (phase !== 'Completed')
        throw new WebhookError(
          'BackupNotCompleted',
          `Backup ${b} is ${phase ?? 'not started'}; only a Completed Backup can be restored`,
        );
      if (parsed?.metadata.deletionTimestamp)
        throw new WebhookError('BackupDeleting', `Backup ${b} is being deleted; restore another Backup`);
      return;
    }
    // The restore function's rule for latest, the same code: safety backups of restores do not count.
    const all = (await kube.list('Backup', ns)).flatMap((raw) => {
      const b = zBackup.safeParse(raw);
      return b.success ? [b.data] : [];
    });
    const completed = pickLatest(all, { kind: 'RedisCluster', name: intent.cluster }) !== undefined;
    if (!completed)
      throw new WebhookError(
        'NoCompletedBackup',
        `RedisCluster ${intent.cluster} has no Completed Backup in namespace ${ns} (safety backups of restores do not count for latest: restore one by name)`,
      );
  };

  const create = async (fence: () => void) => {
    fence();
    const created = await kube.create(intent.kind, ns, objectOf(intent, name, requester, fingerprint));
    if (created !== undefined) return made(false);
    // The same id raced us (another replica, a quick retry): theirs is the first.
    const again = await previous();
    if (again) return again;
    throw new WebhookError('Unavailable', `${intent.kind} ${name} exists and vanished; retry`, {
      retryAfter: 1,
    });
  };

  if (intent.kind === 'Backup') {
    const replay = await previous();
    if (replay) return replay;
    const cluster = await checkCluster();
    if (cluster && !cluster.spec.backup?.store)
      throw new WebhookError(
        'NoBackupStore',
        `RedisCluster ${intent.cluster} has no spec.backup.store; set one, then ask again`,
      );
    return create(() => undefined);
  }

  /**
   * Refuses while another Restore of the cluster runs. The running one may be this id's own: made
   * by an earlier delivery after this one looked (a retry of a slow request). That is a replay.
   */
  const noneRunning = async (): Promise<Submitted | undefined> => {
    const active = (await kube.list('Restore', ns)).flatMap((raw) => {
      const r = zRestore.safeParse(raw);
      return r.success && r.data.spec.cluster.name === intent.cluster && isActive(r.data) ? [r.data] : [];
    });
    if (active.some((r) => r.metadata.name === name)) return previous();
    if (active.length > 0)
      throw new WebhookError(
        'RestoreInProgress',
        `a Restore of RedisCluster ${intent.cluster} is not finished: ${active.map(describeRunning).join(', ')}; ask again when it is`,
      );
    return undefined;
  };

  // Refusals first, without the lock: most requests of a burst end here, and fast.
  const replay = await previous();
  if (replay) return replay;
  await checkCluster();
  await checkSource();
  const ours = await noneRunning();
  if (ours) return ours;
  // Then once more under it, the few reads that decide, and the create.
  return deps.mutex.run(`webhook/restore/${ns}/${intent.cluster}`, async (fence) => {
    const again = (await previous()) ?? (await noneRunning());
    if (again) return again;
    return create(fence);
  });
};
