import type { Backup } from '../api/generated.ts';
import { type ClusterRef, isBackupOf } from './cluster-ref.ts';

/** On a safety backup a restore took: `kubectl get backups -l tideway.dev/safety-backup=true`. */
export const SAFETY_LABEL = 'tideway.dev/safety-backup';

export const isSafetyBackup = (b: Pick<Backup, 'metadata'>) => b.metadata.labels?.[SAFETY_LABEL] === 'true';

const time = (s: string | undefined) => (s ? new Date(s).getTime() : 0);

/** How long after its creation a Backup's snapshot may be taken (it may wait for a source). */
const MAX_WAIT_MS = 24 * 3600_000;

/**
 * When a Backup's data is from: when its snapshot was asked of the source (`status.takenAt`; Redis
 * forks on SYNC — one that joins a BGSAVE already running holds data a little older). Backups
 * without it (older, or Failed) stand in with their start, then their end. Newest by this is latest:
 * Backups of one cluster may run side by side, and the one that finishes last may hold the older
 * data (it started first, or its first source was lost and it began again).
 */
export const takenAtOf = (b: Pick<Backup, 'status' | 'metadata'>): number | undefined => {
  const created = b.metadata.creationTimestamp ? Date.parse(b.metadata.creationTimestamp) : Number.NaN;
  for (const v of [b.status?.takenAt, b.status?.startedAt, b.status?.completedAt]) {
    const t = v ? Date.parse(v) : Number.NaN;
    if (Number.isNaN(t)) continue;
    // Written by the backup function's clock. Long after its object existed, that clock was wrong
    // (a node booted a year ahead), and such a Backup would be "newest" for good — retention
    // would prune every real one, latest would restore it. The API server's creation time stands
    // in; every reader still picks the same. (A time before creation is believed: it errs old.)
    if (!Number.isNaN(created) && t > created + MAX_WAIT_MS) return created;
    return t;
  }
  return undefined;
};

/**
 * What `latest: true` restores: the newest Completed Backup of the cluster, by when its data was
 * taken (then completion, creation and name, so every reader picks the same). Safety backups taken by restores do not
 * count: restoring "the latest backup" after a restore must not silently undo that restore; nor
 * do Backups being deleted (retention, Replace, a person), whose objects are on their way out. The
 * restore function and the webhook (which refuses a request it could not serve) both use this.
 */
export const pickLatest = (backups: readonly Backup[], cluster: ClusterRef): Backup | undefined =>
  backups
    .filter(
      (b) =>
        isBackupOf(b, cluster) &&
        b.status?.phase === 'Completed' &&
        !isSafetyBackup(b) &&
        !b.metadata.deletionTimestamp,
    )
    .sort(
      (a, b) =>
        (takenAtOf(b) ?? 0) - (takenAtOf(a) ?? 0) ||
        time(b.status?.completedAt) - time(a.status?.completedAt) ||
        time(b.metadata.creationTimestamp) - time(a.metadata.creationTimestamp) ||
        b.metadata.name.localeCompare(a.metadata.name),
    )[0];
