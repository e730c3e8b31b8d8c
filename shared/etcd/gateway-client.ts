import type { EtcdClient, EtcdSnapshot } from './client.ts';
import { EtcdError, EtcdProtocolError } from './errors.ts';
import { endpointOrder, shouldFailOver } from './failover.ts';
import { type CallOptions, type EtcdTls, GatewayHttp, normalizeEndpoint } from './http.ts';
import { isMemberId, type MemberId } from './ids.ts';
import { type Bytes, prefixEnd, toBuffer } from './keys.ts';
import { SnapshotStream } from './snapshot-stream.ts';
import type { EndpointStatus } from './types.ts';
import {
  parseAnswer,
  zAlarms,
  zDelete,
  zEmpty,
  zHashKV,
  zMemberAdd,
  zMemberList,
  zPut,
  zRange,
  zStatus,
} from './wire.ts';

export type EtcdClientOptions = {
  /** Client URLs, e.g. https://etcd-0.etcd.ns.svc:2379. */
  readonly endpoints: readonly string[];
  readonly tls?: EtcdTls;
  /** Default per-call timeout (ms); 5 s. */
  readonly timeoutMs?: number;
  /** Default for defragment, which holds the member until done; 5 min. */
  readonly defragmentTimeoutMs?: number;
};

type RangeExtras = { limit?: number; serializable?: boolean; keysOnly?: boolean };

const b64 = (b: Bytes) => toBuffer(b).toString('base64');

const checkId = (id: MemberId) => {
  if (!isMemberId(id))
    throw new TypeError(`not an etcd member id (decimal uint64 string): ${JSON.stringify(id)}`);
  return id;
};

export const createEtcdClient = (options: EtcdClientOptions): EtcdClient => {
  const endpoints = options.endpoints.map(normalizeEndpoint);
  if (endpoints.length === 0) throw new TypeError('etcd client: no endpoints');
  const http = new GatewayHttp(options.tls ? { tls: options.tls } : {});
  const timeoutMs = options.timeoutMs ?? 5000;
  let preferred = 0;

  const callOpts = (o: CallOptions | undefined, defaultMs = timeoutMs) => ({
    timeoutMs: o?.timeoutMs ?? defaultMs,
    ...(o?.signal ? { signal: o.signal } : {}),
  });

  /** Tries the endpoints in turn (see failover.ts); the last error if none answered. */
  const withFailover = async <T>(idempotent: boolean, fn: (endpoint: string) => Promise<T>): Promise<T> => {
    let last: unknown;
    for (const endpoint of endpointOrder(endpoints, preferred)) {
      try {
        const result = await fn(endpoint);
        preferred = endpoints.indexOf(endpoint);
        return result;
      } catch (error) {
        last = error;
        if (!shouldFailOver(error, idempotent)) throw error;
      }
    }
    throw last;
  };

  const call = (path: string, body: unknown, o: CallOptions | undefined, idempotent: boolean) =>
    withFailover(idempotent, async (endpoint) => ({
      endpoint,
      body: await http.post(endpoint, path, body, callOpts(o)),
    }));

  const status = async (endpoint: string, o?: CallOptions): Promise<EndpointStatus> => {
    const e = normalizeEndpoint(endpoint);
    const r = parseAnswer(
      zStatus,
      await http.post(e, '/v3/maintenance/status', {}, callOpts(o)),
      'status',
      e,
    );
    return {
      endpoint: e,
      header: r.header,
      memberId: r.header.memberId,
      version: r.version,
      storageVersion: r.storageVersion,
      dbSize: r.dbSize,
      dbSizeInUse: r.dbSizeInUse,
      dbSizeQuota: r.dbSizeQuota,
      leader: r.leader === '0' ? undefined : r.leader,
      raftIndex: r.raftIndex,
      raftTerm: r.raftTerm,
      raftAppliedIndex: r.raftAppliedIndex,
      isLearner: r.isLearner,
      errors: r.errors,
    };
  };

  const findLeader = async (o?: CallOptions) => {
    const all = await Promise.allSettled(endpoints.map((e) => status(e, o)));
    // A cut-off old leader may still think it leads for an election timeout: the newest term wins.
    let best: EndpointStatus | undefined;
    for (const s of all)
      if (
        s.status === 'fulfilled' &&
        s.value.leader === s.value.memberId &&
        s.value.raftTerm > (best?.raftTerm ?? -1)
      )
        best = s.value;
    return best;
  };

  const memberList: EtcdClient['memberList'] = async (o) => {
    const { endpoint, body } = await call(
      '/v3/cluster/member/list',
      { linearizable: o?.linearizable ?? true },
      o,
      true,
    );
    return parseAnswer(zMemberList, body, 'member list', endpoint);
  };

  const members = async (path: string, body: unknown, o: CallOptions | undefined, what: string) => {
    const r = await call(path, body, o, false);
    return parseAnswer(zMemberList, r.body, what, r.endpoint).members;
  };

  const range = async (key: Buffer, end: Buffer | undefined, o: CallOptions & RangeExtras) => {
    const { endpoint, body } = await call(
      '/v3/kv/range',
      {
        key: key.toString('base64'),
        ...(end ? { range_end: end.toString('base64') } : {}),
        ...(o.limit ? { limit: String(o.limit) } : {}),
        ...(o.serializable ? { serializable: true } : {}),
        ...(o.keysOnly ? { keys_only: true } : {}),
      },
      o,
      true,
    );
    return parseAnswer(zRange, body, 'range', endpoint);
  };

  const snapshotFrom = async (
    endpoint: string,
    o: Parameters<EtcdClient['snapshot']>[0],
  ): Promise<EtcdSnapshot> => {
    // The timeout bounds the wait for the first message; the idle timeout takes over from there.
    const { req, res, done } = await http.open(endpoint, '/v3/maintenance/snapshot', {}, callOpts(o));
    done(undefined);
    const stream = new SnapshotStream(res, {
      endpoint,
      firstMessageTimeoutMs: o?.timeoutMs ?? timeoutMs,
      idleTimeoutMs: o?.idleTimeoutMs ?? 30_000,
      abort: () => req.destroy(),
      ...(o?.signal ? { signal: o.signal } : {}),
      ...(o?.highWaterMark ? { highWaterMark: o.highWaterMark } : {}),
    });
    await stream.ready;
    const dbSize = stream.dbSize;
    if (dbSize === undefined)
      throw new EtcdProtocolError('snapshot: no size in its first message', { endpoint });
    return { stream, size: dbSize + 32, dbSize, storageVersion: stream.storageVersion, endpoint };
  };

  const client: EtcdClient = {
    endpoints,

    memberList,
    memberAdd: async (peerURLs, o) => {
      const r = await call(
        '/v3/cluster/member/add',
        { peerURLs, isLearner: o?.isLearner ?? false },
        o,
        false,
      );
      const a = parseAnswer(zMemberAdd, r.body, 'member add', r.endpoint);
      return { member: a.member, members: a.members };
    },
    memberPromote: async (id, o) =>
      members('/v3/cluster/member/promote', { ID: checkId(id) }, o, 'member promote'),
    memberRemove: async (id, o) =>
      members('/v3/cluster/member/remove', { ID: checkId(id) }, o, 'member remove'),
    memberUpdate: async (id, peerURLs, o) =>
      members('/v3/cluster/member/update', { ID: checkId(id), peerURLs }, o, 'member update'),

    status,
    findLeader,

    alarmList: async (o) => {
      const r = await call('/v3/maintenance/alarm', { action: 'GET' }, o, true);
      return parseAnswer(zAlarms, r.body, 'alarm list', r.endpoint);
    },
    alarmDisarm: async (alarm, o) => {
      const body = { action: 'DEACTIVATE', memberID: checkId(alarm.memberId), alarm: alarm.alarm };
      const r = await call('/v3/maintenance/alarm', body, o, false);
      return parseAnswer(zAlarms, r.body, 'alarm disarm', r.endpoint);
    },

    moveLeader: async (targetId, o) => {
      const body = { targetID: checkId(targetId) };
      let endpoint = o?.endpoint ? normalizeEndpoint(o.endpoint) : (await findLeader(o))?.endpoint;
      if (!endpoint) {
        // No configured endpoint is the leader: ask for it by id and use its advertised URLs.
        const anyStatus = await withFailover(true, (e) => status(e, o));
        const leader = (await memberList(o)).members.find((m) => m.id === anyStatus.leader);
        endpoint = leader?.clientURLs[0];
        if (!endpoint)
          throw new EtcdError('NoLeader', 'move leader: no leader, or it advertises no client URL', {
            retry: true,
          });
        endpoint = normalizeEndpoint(endpoint);
      }
      parseAnswer(
        zEmpty,
        await http.post(endpoint, '/v3/maintenance/transfer-leadership', body, callOpts(o)),
        'move leader',
        endpoint,
      );
      return { endpoint };
    },
    defragment: async (endpoint, o) => {
      const e = normalizeEndpoint(endpoint);
      const body = await http.post(
        e,
        '/v3/maintenance/defragment',
        {},
        callOpts(o, options.defragmentTimeoutMs ?? 300_000),
      );
      parseAnswer(zEmpty, body, 'defragment', e);
    },
    hashKV: async (endpoint, o) => {
      const e = normalizeEndpoint(endpoint);
      const req = o?.revision ? { revision: String(o.revision) } : {};
      return parseAnswer(
        zHashKV,
        await http.post(e, '/v3/maintenance/hashkv', req, callOpts(o)),
        'hashkv',
        e,
      );
    },

    put: async (key, value, o) => {
      const r = await call('/v3/kv/put', { key: b64(key), value: b64(value) }, o, false);
      return { revision: parseAnswer(zPut, r.body, 'put', r.endpoint).header.revision };
    },
    get: async (key, o) => (await range(toBuffer(key), undefined, o ?? {})).kvs[0],
    range: (o) => {
      const prefix = toBuffer(o.prefix);
      return range(prefix, prefixEnd(prefix), o);
    },
    delete: async (key, o) => {
      const k = typeof key === 'object' && 'prefix' in key ? toBuffer(key.prefix) : toBuffer(key as Bytes);
      const end =
        typeof key === 'object' && 'prefix' in key ? { range_end: prefixEnd(k).toString('base64') } : {};
      const r = await call('/v3/kv/deleterange', { key: k.toString('base64'), ...end }, o, false);
      return { deleted: parseAnswer(zDelete, r.body, 'delete', r.endpoint).deleted };
    },

    compact: async (revision, o) => {
      const body = { revision: String(revision), ...(o?.physical ? { physical: true } : {}) };
      const r = await call('/v3/kv/compaction', body, o, false);
      parseAnswer(zEmpty, r.body, 'compact', r.endpoint);
    },

    snapshot: (o) =>
      o?.endpoint
        ? snapshotFrom(normalizeEndpoint(o.endpoint), o)
        : withFailover(true, (endpoint) => snapshotFrom(endpoint, o)),

    close: () => http.close(),
    [Symbol.dispose]: () => http.close(),
  };
  return client;
};
