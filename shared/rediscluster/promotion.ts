import type { RedisClusterStatus } from '../api/generated.ts';
import { type InfoSections, isHistory, parseReplication, type Replication } from '../redis/info.ts';
import type { Instance } from './probe.ts';

/** The record of whose data the cluster holds (status.replication). */
export type History = NonNullable<RedisClusterStatus['replication']>;

/**
 * Most advanced first: the higher replication offset (more of the history); on a tie the one
 * with more keys, then the lower ordinal, so that every decider picks the same one. Keys matter
 * where offsets say nothing: a server that restarts as a replica from an append-only file alone
 * (no snapshot with replication info) reports offset 1 and a fresh id, exactly as an empty one
 * does. The one ordering of instances by data; failover, switchover and reconcile all use it.
 */
export const mostAdvancedFirst = (a: Instance, b: Instance) =>
  (b.replication?.offset ?? -1) - (a.replication?.offset ?? -1) ||
  (b.keys ?? 0) - (a.keys ?? 0) ||
  a.ordinal - b.ordinal;

/**
 * A server that came back without its replication history: a fresh id, not the cluster's, and the
 * offset of a server that never had a master (1; Redis 7 after a restart from an append-only file
 * alone, or with nothing on disk). Its keys, if any, may well be the cluster's data; where they
 * stand in the history cannot be told.
 */
export const withoutHistory = (r: Replication | undefined, ids: readonly (string | undefined)[]) =>
  !!r && r.offset <= 1 && !ids.includes(r.replid) && !ids.includes(r.replid2 ?? '');

/**
 * The record after seeing a master serve: a new id (a promotion, a reinstated master) pushes the
 * ones before it — the recorded id, and the id the master says it continued from — onto
 * `previous`, so instances that hold an earlier part of the same data are still known as such
 * after several promotions (a server remembers only one earlier id).
 */
export const recordHistory = (
  before: History | undefined,
  master: { replid: string; replid2?: string; offset: number },
): History => {
  const earlier = before?.id === master.replid ? [] : [master.replid2, before?.id];
  const previous = [...new Set([...earlier, ...(before?.previous ?? [])])]
    .filter((p): p is string => isHistory(p) && p !== master.replid)
    .slice(0, 8);
  return {
    id: master.replid,
    offset: master.offset,
    ...(previous.length ? { previous } : {}),
    // What a restore replaced stays known as replaced: its instances are resynchronized, never promoted.
    ...(before?.superseded?.length ? { superseded: before.superseded } : {}),
  };
};

/** Ids whose data is part of the cluster's history: the record and what came before it. */
export const historyIds = (h: History | undefined) => [h?.id, ...(h?.previous ?? [])].filter(isHistory);

/** A replica may lose its link this long after the master was first found unreachable. */
const LINK_SLACK_SECONDS = 5;

export type Candidates = {
  /** Safe to promote, most advanced first. */
  safe: Instance[];
  /** Why each other instance may not be promoted (for the Healthy condition). */
  refused: { pod: string; why: string }[];
};

/**
 * The replicas that may take over from a lost master. Promoting one that lacks the data makes
 * the master and replicas that come back follow it, and wipes them; so a candidate must
 * - answer, as a replica, with no full sync running and an address;
 * - have its link to the master down (a link that is up means the master lives, cut off only
 *   from Tideway: promoting would make two masters);
 * - belong to the cluster's replication history (its id, or the id it continued from), so that it
 *   holds a prefix of the master's data, not an empty or foreign data set;
 * - have lost its link to the master no earlier than the master was lost: it followed the master
 *   until then (a replica that was down, never synced since it started, or followed nothing, does
 *   not qualify, whatever its offset says) — unless the master answers and holds less than it.
 */
export const promotionCandidates = (
  instances: readonly Instance[],
  o: {
    master: string | undefined;
    history: History | undefined;
    masterDownSeconds: number;
    /**
     * The lost master's offset when it answers (it came back fenced with less data): a replica of
     * the history with more than that loses nothing by taking over, however long ago its link
     * went down (after a restart of every instance, no link has been up since).
     */
    masterOffset?: number;
  },
): Candidates => {
  const safe: Instance[] = [];
  const refused: Candidates['refused'] = [];
  const ids = historyIds(o.history);
  for (const i of instances) {
    if (i.pod === o.master) continue;
    const r = i.replication;
    const why = (() => {
      if (i.terminating) return 'is terminating';
      if (!r || !i.ip) return `does not answer${i.error ? ` (${i.error})` : ''}`;
      if (r.role !== 'replica') return 'is not a replica';
      if (r.syncInProgress) return 'is in the middle of a full sync';
      // Its master still feeds it: the master is alive, only unreachable from Tideway (a
      // partition). Promoting now would make two masters that both take writes.
      if (r.linkUp) return 'still has its link to a master up';
      if (ids.length && withoutHistory(r, ids) && (i.keys ?? 0) > 0)
        return `restarted without its replication history (${i.keys} keys, offset ${r.offset}: an append-only file keeps no replication id), so whether it holds all the data cannot be told; it is left as it is`;
      if (ids.length && !ids.includes(r.replid) && !ids.includes(r.replid2))
        return i.keys === 0 ? 'holds no data' : 'holds data of another replication history';
      if (!ids.length && !isHistory(r.replid)) return 'has no replication history';
      if (o.masterOffset !== undefined && r.offset > o.masterOffset) return undefined;
      if (r.linkDownSeconds > o.masterDownSeconds + LINK_SLACK_SECONDS)
        return Number.isFinite(r.linkDownSeconds)
          ? `lost its master ${Math.round(r.linkDownSeconds)}s ago, before the master was lost`
          : 'has not synced from the master since it started';
      return undefined;
    })();
    if (why) refused.push({ pod: i.pod, why });
    else safe.push(i);
  }
  return { safe: safe.sort(mostAdvancedFirst), refused };
};

/** Which server process answers, and where it stands: what a promotion was judged on. */
export type Identity = { runId: string; loading: boolean; replication: Replication };

export const identityOf = (info: InfoSections): Identity => ({
  runId: info.server?.run_id ?? '',
  loading: info.persistence?.loading === '1' || info.persistence?.async_loading === '1',
  replication: parseReplication(info),
});

/**
 * Why a server is no longer the instance a promotion was judged on (`judged`, from the probe; and
 * `runId`, the process seen since), or undefined when it still is. A candidate is a replica whose
 * link is down, so its replication id and offset stand still; a restart in between (empty, from an
 * older snapshot, with other data), a sync, or a master that came back moves one of them, and the
 * judgement no longer holds.
 */
export const changedSince = (
  judged: Replication | undefined,
  now: Identity,
  runId?: string,
): string | undefined => {
  const r = now.replication;
  if (runId !== undefined && now.runId !== runId) return `restarted (run_id ${runId} → ${now.runId})`;
  if (now.loading) return 'is loading its data set (it restarted)';
  if (judged?.role !== 'replica') return 'was not judged as a replica';
  if (r.role !== 'replica') return 'is no longer a replica';
  if (r.linkUp) return 'has its link to a master up again';
  if (r.syncInProgress) return 'started a full sync';
  if (r.replid !== judged.replid || r.replid2 !== judged.replid2)
    return `holds another replication history (${judged.replid} → ${r.replid})`;
  if (r.offset !== judged.offset) return `moved from offset ${judged.offset} to ${r.offset}`;
  // The same id and offset, but its link never came up since it started: it restarted from a
  // snapshot of that very point, and what the judgement knew of its link is void.
  if (Number.isFinite(judged.linkDownSeconds) && !Number.isFinite(r.linkDownSeconds))
    return 'restarted (its link has not been up since)';
  return undefined;
};
