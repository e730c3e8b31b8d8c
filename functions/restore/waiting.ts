import type { CloudEvent } from 'cloudevents';
import { EventType } from '../../shared/events/types.ts';
import type { HandlerContext } from '../../shared/runtime/handler.ts';
import { readBackup } from './kube.ts';
import { MADE_BY } from './safety.ts';

const OUTCOMES = new Set<string>([EventType.backupCompleted, EventType.backupFailed]);

const ext = (event: CloudEvent<unknown>, name: string) => {
  const v = (event as unknown as Record<string, unknown>)[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

/** The Restore a safety backup's outcome is for: its name and uid, from the Backup's annotations. */
export type Waiting = { event: CloudEvent<unknown>; uid: string };

/**
 * A Backup's outcome (`dev.tideway.backup.completed|failed`, published by the backup function)
 * as the event of the Restore that made it as its safety backup, which waits for nothing else;
 * undefined for every other Backup. The Backup is read for its maker: outcomes do not name it.
 */
export const waitingRestore = async (
  event: CloudEvent<unknown>,
  ctx: HandlerContext,
): Promise<Waiting | undefined> => {
  const [namespace, name] = [ext(event, 'namespace'), ext(event, 'name')];
  if (ext(event, 'kind') !== 'Backup' || !OUTCOMES.has(event.type) || !namespace || !name) return undefined;
  const b = await readBackup(ctx.kube, namespace, name);
  const restore = b?.metadata.annotations?.[MADE_BY.restore];
  const uid = b?.metadata.annotations?.[MADE_BY.uid];
  if (!restore || !uid) return undefined;
  return {
    uid,
    event: event.cloneWith({
      kind: 'Restore',
      name: restore,
      subject: `namespaces/${namespace}/restores/${restore}`,
    }),
  };
};
