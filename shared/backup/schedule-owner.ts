/**
 * The BackupSchedule that controls a Backup (its controller owner reference), for the `schedule`
 * CloudEvent extension: the schedule function locks that schedule for the Backup's events
 * (functions/schedule/index.ts lockKey), whoever publishes them — the watcher or the backup
 * function's outcomes.
 */
export const scheduleOwnerOf = (metadata: unknown): string | undefined => {
  const refs = (metadata as { ownerReferences?: { kind?: unknown; name?: unknown; controller?: unknown }[] })
    ?.ownerReferences;
  const owner = refs?.find((r) => r.controller === true && r.kind === 'BackupSchedule');
  return typeof owner?.name === 'string' && owner.name ? owner.name : undefined;
};
