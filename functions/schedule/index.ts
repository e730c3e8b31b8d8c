import type { CloudEvent } from 'cloudevents';
import { extension } from '../../shared/events/extension.ts';
import { EventType } from '../../shared/events/types.ts';
import { handlerRecorder } from '../../shared/kube/events.ts';
import { done, type HandlerContext, type Outcome, retryAfter } from '../../shared/runtime/handler.ts';
import { onBehalf } from '../../shared/runtime/on-behalf.ts';
import { readClock } from './clock.ts';
import { isLoaded, loadSchedule, readBackup } from './kube.ts';
import { madeBySchedule } from './names.ts';
import { sync } from './sync.ts';
import { parseTick, runOnce } from './tick.ts';

type Target = { key: { namespace: string; name: string }; uid: string | undefined };

/**
 * While a run's Backup is unfinished, its tick comes back this often to see it finish (then
 * status and retention follow at once): 1 s, doubling to 30 s. Only the latest run's tick does.
 */
export const pollDelayMs = (attempt: number) => Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));

const scheduleOf = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Target | undefined> => {
  const [kind, namespace, name] = [
    extension(event, 'kind'),
    extension(event, 'namespace'),
    extension(event, 'name'),
  ];
  if (!namespace || !name) return undefined;
  if (kind === 'BackupSchedule') return { key: { namespace, name }, uid: extension(event, 'uid') };
  if (kind !== 'Backup') return undefined;
  // A deleted Backup is known from the event (the watcher sends its last state), not the API.
  const last = (event.data as { object?: unknown } | undefined)?.object;
  const b = event.type === EventType.deleted ? last : await readBackup(ctx.kube, { namespace, name });
  const maker = madeBySchedule(b as Parameters<typeof madeBySchedule>[0]);
  return maker ? { key: { namespace, name: maker.name }, uid: maker.uid } : undefined;
};

/** The schedule's own events and ticks, and changes of its Backups: all end in the same sync. */
const handleSchedule = async (target: Target, event: CloudEvent<unknown>, ctx: HandlerContext) => {
  const loaded = await loadSchedule(ctx.kube, target.key);
  if (!isLoaded(loaded)) return loaded;
  const { schedule } = loaded;
  // About an earlier schedule of that name (deleted and made anew), or one on its way out.
  if ((target.uid && target.uid !== schedule.metadata.uid) || schedule.metadata.deletionTimestamp)
    return done;

  const now = ctx.clock();
  const clock = readClock(schedule.spec);
  const o = {
    ctx,
    loaded,
    clock,
    now,
    recorder: handlerRecorder(ctx, 'schedule'),
    regarding: {
      apiVersion: schedule.apiVersion,
      kind: schedule.kind,
      namespace: target.key.namespace,
      name: schedule.metadata.name,
      uid: schedule.metadata.uid ?? '',
    },
  };
  const tick = event.type === EventType.scheduleTick ? parseTick(event) : undefined;
  if (tick) await runOnce({ ...o, tick });
  const status = await sync(o);

  const latest =
    tick &&
    status.lastScheduleTime &&
    new Date(status.lastScheduleTime).getTime() === tick.scheduledTime.getTime();
  // Polling ends before the attempts do: the next tick takes over, never a RetriesExhausted.
  if (latest && (status.active?.length ?? 0) > 0 && ctx.attempt < ctx.maxAttempts - 1)
    return retryAfter(pollDelayMs(ctx.attempt), 'WaitingForBackup');
  return done;
};

/**
 * schedule: makes a Backup for each run of a BackupSchedule (the watcher's schedule ticks), in
 * the schedule's time zone, honouring suspend, concurrencyPolicy and startingDeadlineSeconds and
 * counting missed runs; keeps its status current and prunes its Backups by its retention. Runs on
 * ticks, on changes of the schedule, and on changes and outcomes of its Backups. Level-triggered:
 * the event names the schedule (and the run), everything else is read afresh.
 */
export const handler = async (event: CloudEvent<unknown>, ctx: HandlerContext): Promise<Outcome> => {
  if (extension(event, 'kind') !== 'Backup') {
    const target = await scheduleOf(event, ctx);
    return target ? handleSchedule(target, event, ctx) : done;
  }
  // A Backup's change only hurries its schedule along (ticks and polls get there too), and the
  // Backup is the backup function's to report on: a failure here never becomes its condition.
  return onBehalf(ctx, 'schedule not updated after a change of its Backup', async () => {
    const target = await scheduleOf(event, ctx);
    return target ? handleSchedule(target, event, ctx) : done;
  });
};
