import type { CloudEvent } from 'cloudevents';
import type { Restore } from '../../shared/api/generated.ts';
import { clusterLockKey } from '../../shared/events/cluster-lock-key.ts';
import { extension } from '../../shared/events/extension.ts';
import { EventType } from '../../shared/events/types.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { readBackup } from './kube.ts';
import { MADE_BY } from './safety.ts';

const OUTCOMES = new Set<string>([EventType.backupCompleted, EventType.backupFailed]);

/** A Backup's outcome as the event of the Restore its annotations name. */
export type Waiting = {
  event: CloudEvent<unknown>;
  /** The Restore's uid, the Backup's name, and the lock this run holds (the outcome's). */
  uid: string;
  backup: string;
  lock: string;
};

/**
 * A Backup's outcome (`dev.tideway.backup.completed|failed`, published by the backup function)
 * as the event of the Restore its annotations name as its maker; undefined for other Backups.
 * The Backup is read for them: outcomes do not carry them. Annotations anyone may copy: the
 * Restore runs only if `waitsFor` agrees.
 */
export const waitingRestore = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<Waiting | undefined> => {
  const [namespace, name] = [extension(event, 'namespace'), extension(event, 'name')];
  if (extension(event, 'kind') !== 'Backup' || !OUTCOMES.has(event.type) || !namespace || !name)
    return undefined;
  const b = await readBackup(ctx.kube, namespace, name);
  const restore = b?.metadata.annotations?.[MADE_BY.restore];
  const uid = b?.metadata.annotations?.[MADE_BY.uid];
  if (!restore || !uid) return undefined;
  return {
    uid,
    backup: name,
    lock: clusterLockKey(event),
    event: event.cloneWith({
      kind: 'Restore',
      name: restore,
      subject: `namespaces/${namespace}/restores/${restore}`,
    }),
  };
};

/**
 * Whether the Restore waits for that very Backup — its recorded safety backup, made by it (uid) —
 * and the run holds the lock the Restore's own runs take (its cluster's): a Backup of another
 * cluster, or one that only claims to be its safety backup, never runs it beside them. Only in
 * SafetyBackup: an outcome that comes late or again (the backup function announces a finished
 * Backup at each of its events) never drives a Restore that has gone on to load.
 */
export const waitsFor = (w: Pick<Waiting, 'uid' | 'backup' | 'lock'>, restore: Restore) =>
  restore.metadata.uid === w.uid &&
  restore.status?.safetyBackup === w.backup &&
  restore.status?.phase === 'SafetyBackup' &&
  w.lock ===
    clusterLockKey({
      kind: 'Restore',
      namespace: restore.metadata.namespace,
      name: restore.metadata.name,
      cluster: restore.spec.cluster.name,
    } as unknown as CloudEvent<unknown>);
