import { z } from 'zod';
import type { Backup, Restore } from '../api/generated.ts';
import { keyOfLocation, s3KeyOf } from '../backup/location.ts';
import { isActive } from './ended.ts';

/**
 * The annotation where a Restore keeps what its runs must agree on (functions/restore/state.ts
 * owns the rest of it); here only the part others read: which Backup it restores.
 */
export const STATE_ANNOTATION = 'tideway.dev/restore-state';

/** What a Restore restores, once resolved: a Backup (by name and uid) or an S3 key. */
export const zSourceRef = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('backup'), name: z.string().min(1), uid: z.string() }),
  z.object({ kind: z.literal('s3'), key: z.string().min(1) }),
]);
export type SourceRef = z.infer<typeof zSourceRef>;

/**
 * Set when a run ends a Restore the runtime gave up on before it loaded anything: from the give-up
 * on it kept no other Restore of its cluster from starting (`isActive`), though it finished later.
 */
export const zGivenUpBeforeLoad = z.object({ at: z.string().min(1) });

/** One part of another Restore's state, as others read it: nothing when absent or unreadable. */
export const statePart = <T>(
  r: Pick<Restore, 'metadata'>,
  part: 'source' | 'givenUp',
  schema: z.ZodType<T>,
): T | undefined => {
  try {
    const raw = r.metadata.annotations?.[STATE_ANNOTATION];
    return raw ? schema.safeParse((JSON.parse(raw) as Record<string, unknown>)[part]).data : undefined;
  } catch {
    return undefined;
  }
};

/** The Backup a Restore resolved (`latest` included), if its state says so; nothing if unreadable. */
const resolvedSource = (r: Restore): SourceRef | undefined => statePart(r, 'source', zSourceRef);

/** The Backups a Restore loads from or may roll back to: by name, the resolved one with its uid. */
export const backupsUsedBy = (r: Restore): { name: string; uid?: string }[] => {
  const resolved = resolvedSource(r);
  return [
    ...(r.spec.source.backup?.name ? [{ name: r.spec.source.backup.name }] : []),
    ...(r.status?.safetyBackup ? [{ name: r.status.safetyBackup }] : []),
    ...(resolved?.kind === 'backup' ? [{ name: resolved.name, uid: resolved.uid }] : []),
  ];
};

/**
 * Whether a Restore's raw S3 source (`source.s3`) may be the Backup's stored object: the bucket
 * the Backup wrote to, and its key (as resolved, or as given under the prefix). Endpoints are not
 * compared: one server has many names (none for AWS, a region's, a Service's short and long), and
 * keeping a Backup a while too long costs little, deleting an object a restore reads much.
 */
const readsObjectOf = (r: Restore, backup: Pick<Backup, 'status'>): boolean => {
  const s3 = r.spec.source.s3;
  const store = backup.status?.store?.s3;
  if (!s3 || !store || s3.store.s3.bucket !== store.bucket) return false;
  const resolved = resolvedSource(r);
  const key = resolved?.kind === 's3' ? resolved.key : s3KeyOf(s3.store.s3.prefix, s3.key);
  return key === keyOfLocation(backup.status?.location ?? '', store.bucket);
};

/**
 * The Restores that still need `backup`'s stored object (`isActive`: unfinished, not given up):
 * to load it (named, resolved from `latest`, or its object named by a raw S3 key), or to roll
 * back to it (their safety backup). Deleting it under them would fail the restore, or leave a
 * failed load with no way back.
 */
export const restoresUsing = (
  restores: readonly Restore[],
  backup: Pick<Backup, 'metadata' | 'status'>,
): string[] => {
  const { name, uid } = backup.metadata;
  return restores
    .filter(isActive)
    .filter(
      (r) =>
        backupsUsedBy(r).some((u) => u.name === name && (!u.uid || !uid || u.uid === uid)) ||
        readsObjectOf(r, backup),
    )
    .map((r) => r.metadata.name);
};
