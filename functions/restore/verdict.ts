import type { Failure } from './errors.ts';
import type { Load, LoadKind } from './state.ts';

/** What the target of a load says of itself now (INFO), or undefined when it does not answer. */
export type TargetNow = {
  role: 'master' | 'replica';
  replid: string;
  replid2?: string | undefined;
  /** The master it follows, when a replica. */
  masterHost?: string | undefined;
  loading: boolean;
};

/**
 * Which data the target of a load holds:
 * - `loaded`: the loaded RDB's — it carries the feed's replication id (as master_replid while it
 *   still follows the feed, as master_replid2 once promoted), and nothing else can;
 * - `untouched`: its own — the whole RDB never reached it, and a server replaces its data only
 *   once it has the whole file (disk-based loading);
 * - `unknown`: it was given the whole file but did not finish loading it: it may have emptied its
 *   data set and loaded part of the file, or nothing;
 * - `loading` / `unreachable`: not yet known.
 */
export type DataVerdict = 'loaded' | 'untouched' | 'unknown' | 'loading' | 'unreachable';

export const judgeLoad = (
  load: Pick<Load, 'replid' | 'delivered'>,
  now: TargetNow | undefined,
): DataVerdict => {
  if (!now) return 'unreachable';
  if (now.loading) return 'loading';
  if (now.replid === load.replid || now.replid2 === load.replid) return 'loaded';
  return load.delivered ? 'unknown' : 'untouched';
};

/** What the target must be told after a load, whatever its data: to serve again as a master. */
export const needsPromotion = (now: TargetNow | undefined, feedHost: string) =>
  now?.role === 'replica' && now.masterHost === feedHost;

export type Next =
  | { readonly do: 'wait'; readonly why: string }
  | { readonly do: 'finish'; readonly data: 'restored' | 'rolledBack' }
  | { readonly do: 'load'; readonly of: LoadKind }
  | {
      readonly do: 'fail';
      /**
       * Which data the cluster holds now: its own from before the restore, no one knows, or the
       * backup's over the master's maxmemory.
       */
      readonly data: 'untouched' | 'unknown' | 'overMaxmemory';
      readonly reason: string;
      readonly message: string;
    };

/**
 * The step after a load, from what the target holds. A load that did not reach the target is
 * tried again while attempts remain (an interruption — the function stopped — is worth another
 * try; a failure that will not pass is not); a load that may have left the master half-loaded is
 * rolled back to the safety backup when there is one. A rollback that does not take leaves the
 * data unknown: that is said, never hidden.
 */
export const nextStep = (o: {
  verdict: DataVerdict;
  load: Pick<Load, 'of' | 'pod' | 'delivered'>;
  /** The load's own error, when this run saw it fail; undefined after an interruption. */
  error?: Failure | undefined;
  loads: number;
  rollbacks: number;
  maxLoads: number;
  safetyBackup?: string | undefined;
}): Next => {
  const { verdict, load, error } = o;
  const what = error
    ? `${error.reason}: ${error.message}`
    : 'the load was interrupted (the restore function stopped)';
  switch (verdict) {
    case 'loading':
      return { do: 'wait', why: `${load.pod} is loading` };
    case 'unreachable':
      return { do: 'wait', why: `${load.pod} does not answer` };
    case 'loaded':
      // Loaded though its end was never sent: what the master parsed ended early, so it was not
      // the RDB that was checked (a crafted object: the checksum fails only after). Never restored.
      if (!load.delivered) {
        if (load.of === 'restore' && o.safetyBackup) return { do: 'load', of: 'rollback' };
        return {
          do: 'fail',
          data: 'unknown',
          reason: load.of === 'restore' ? 'LoadedUnverified' : 'RollbackFailed',
          message: `${load.pod} took a data set whose end was never sent (${what}): it is not the ${load.of === 'restore' ? 'backup' : 'safety backup'} that was checked${load.of === 'restore' ? ', and there is no safety backup to roll back to' : ''}: check it, and restore again from a backup that verifies`,
        };
      }
      // Loaded, but more than the master's maxmemory: promoted, Redis evicts (or refuses writes).
      if (load.of === 'restore' && error?.reason === 'ExceedsMaxmemory') {
        if (o.safetyBackup) return { do: 'load', of: 'rollback' };
        return {
          do: 'fail',
          data: 'overMaxmemory',
          reason: error.reason,
          message: `${error.message}; ${load.pod} holds the backup's data over that limit and there is no safety backup to roll back to: it serves it, and Redis evicts keys of it as it takes writes (noeviction: refuses writes that need memory) until maxmemory is raised`,
        };
      }
      return { do: 'finish', data: load.of === 'restore' ? 'restored' : 'rolledBack' };
    case 'untouched':
      if (load.of === 'restore') {
        if ((!error || error.retry) && o.loads < o.maxLoads) return { do: 'load', of: 'restore' };
        return {
          do: 'fail',
          data: 'untouched',
          reason: error?.reason ?? 'Interrupted',
          message: `${what}${o.loads >= o.maxLoads ? ` (load ${o.loads} of ${o.maxLoads})` : ''}; the RDB never reached ${load.pod} whole, so it kept the data it had before the restore`,
        };
      }
      if ((!error || error.retry) && o.rollbacks < o.maxLoads) return { do: 'load', of: 'rollback' };
      return {
        do: 'fail',
        data: 'unknown',
        reason: 'RollbackFailed',
        message: `the rollback to safety backup ${o.safetyBackup ?? ''} did not reach ${load.pod} (${what}); its data is what the failed load left: check it, and restore the safety backup by name`,
      };
    case 'unknown':
      if (load.of === 'restore' && o.safetyBackup) return { do: 'load', of: 'rollback' };
      return {
        do: 'fail',
        data: 'unknown',
        reason: load.of === 'restore' ? (error?.reason ?? 'LoadFailed') : 'RollbackFailed',
        message:
          load.of === 'restore'
            ? `${load.pod} was sent the whole RDB but did not load it (${what}); it may hold part of the backup's data or none, and there is no safety backup to roll back to: check it, and restore again`
            : `${load.pod} was sent the whole safety backup ${o.safetyBackup ?? ''} but did not load it (${what}); its data may be incomplete: check it, and restore the safety backup by name`,
      };
  }
};
