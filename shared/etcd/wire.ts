import { z } from 'zod';
import { EtcdProtocolError } from './errors.ts';
import type { Alarm, HashKV, KeyValue, Member, ResponseHeader } from './types.ts';

// The gateway's JSON (grpc-gateway over rpc.proto; etcd 3.5 and 3.6 alike): proto field names,
// 64-bit integers as decimal strings, bytes as base64, enums by name, zero values left out.

/** int64/uint64 counters (revisions, raft indexes, sizes) as numbers: refused past 2^53, never rounded. */
const zInt = z.union([z.string().regex(/^-?\d+$/), z.number().int()]).transform((v, ctx) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) {
    ctx.addIssue({ code: 'custom', message: `${v} is past 2^53` });
    return z.NEVER;
  }
  return n;
});
const zCount = zInt.optional().default(0);
/** uint64 ids stay strings. */
const zId = z.string().regex(/^\d{1,20}$/, 'a decimal uint64');
const zIdOr0 = zId.optional().default('0');

/** Decodes base64, refusing characters Buffer.from would silently skip. */
export const decodeBase64 = (s: string): Buffer | undefined => {
  const b = Buffer.from(s, 'base64');
  const unpadded = s.replace(/=+$/, '');
  return Math.floor((unpadded.length * 3) / 4) === b.length && /^[A-Za-z0-9+/_-]*$/.test(unpadded)
    ? b
    : undefined;
};
const zBytes = z
  .string()
  .optional()
  .default('')
  .transform((s, ctx) => {
    const b = decodeBase64(s);
    if (!b) {
      ctx.addIssue({ code: 'custom', message: 'not base64' });
      return z.NEVER;
    }
    return b;
  });

const zHeader = z
  .object({ cluster_id: zIdOr0, member_id: zIdOr0, revision: zCount, raft_term: zCount })
  .optional()
  .default({ cluster_id: '0', member_id: '0', revision: 0, raft_term: 0 })
  .transform(
    (h): ResponseHeader => ({
      clusterId: h.cluster_id,
      memberId: h.member_id,
      revision: h.revision,
      raftTerm: h.raft_term,
    }),
  );

const zMember = z
  .object({
    ID: zId,
    name: z.string().optional().default(''),
    peerURLs: z.array(z.string()).optional().default([]),
    clientURLs: z.array(z.string()).optional().default([]),
    isLearner: z.boolean().optional().default(false),
  })
  .transform(
    (m): Member => ({
      id: m.ID,
      name: m.name,
      peerURLs: m.peerURLs,
      clientURLs: m.clientURLs,
      isLearner: m.isLearner,
    }),
  );
const zMembers = z.array(zMember).optional().default([]);

export const zMemberList = z.object({ header: zHeader, members: zMembers });
export const zMemberAdd = z.object({ header: zHeader, member: zMember, members: zMembers });

export const zStatus = z.object({
  header: zHeader,
  version: z.string().optional().default(''),
  storageVersion: z.string().optional(),
  dbSize: zCount,
  dbSizeInUse: zCount,
  dbSizeQuota: zInt.optional(),
  leader: zIdOr0,
  raftIndex: zCount,
  raftTerm: zCount,
  raftAppliedIndex: zCount,
  isLearner: z.boolean().optional().default(false),
  errors: z.array(z.string()).optional().default([]),
});

const zAlarmType = z.enum(['NONE', 'NOSPACE', 'CORRUPT']).optional().default('NONE');
export const zAlarms = z
  .object({
    header: zHeader,
    alarms: z
      .array(z.object({ memberID: zIdOr0, alarm: zAlarmType }))
      .optional()
      .default([]),
  })
  .transform((r): Alarm[] => r.alarms.map((a) => ({ memberId: a.memberID, alarm: a.alarm })));

const zKeyValue = z
  .object({
    key: zBytes,
    value: zBytes,
    create_revision: zCount,
    mod_revision: zCount,
    version: zCount,
    lease: z
      .union([z.string().regex(/^-?\d+$/), z.number().int()])
      .optional()
      .default('0')
      .transform(String),
  })
  .transform(
    (kv): KeyValue => ({
      key: kv.key,
      value: kv.value,
      createRevision: kv.create_revision,
      modRevision: kv.mod_revision,
      version: kv.version,
      lease: kv.lease,
    }),
  );

export const zRange = z.object({
  header: zHeader,
  kvs: z.array(zKeyValue).optional().default([]),
  more: z.boolean().optional().default(false),
  count: zCount,
});
export const zPut = z.object({ header: zHeader });
export const zDelete = z.object({ header: zHeader, deleted: zCount });
export const zEmpty = z.object({ header: zHeader }).or(z.object({}));

export const zHashKV = z
  .object({
    header: zHeader,
    hash: z.number().int().nonnegative().optional().default(0),
    compact_revision: zCount,
    hash_revision: zInt.optional(),
  })
  .transform(
    (r): HashKV => ({
      header: r.header,
      hash: r.hash,
      compactRevision: r.compact_revision,
      hashRevision: r.hash_revision,
    }),
  );

/** One message of the snapshot stream, inside its `result`. */
export const zSnapshotChunk = z.object({
  remaining_bytes: zCount,
  blob: z.string().optional().default(''),
  version: z.string().optional(),
});

const zStatusBody = z.object({
  code: z.number().int().optional(),
  grpc_code: z.number().int().optional(),
  message: z.string().optional(),
});

/**
 * A gRPC status out of a gateway error body, in any of its shapes: `{code, message}` (3.6),
 * `{error: "…", code, message}` (3.5), and in a stream `{error: {code, message}}` (3.6) or
 * `{error: {grpc_code, http_code, message}}` (3.5). Undefined when it is none of them.
 */
export const statusOf = (body: unknown): { code: number; message: string } | undefined => {
  if (typeof body !== 'object' || body === null) return undefined;
  const inner = (body as { error?: unknown }).error;
  const candidate = typeof inner === 'object' && inner !== null ? inner : body;
  const parsed = zStatusBody.safeParse(candidate);
  if (!parsed.success) return undefined;
  const code = parsed.data.code ?? parsed.data.grpc_code;
  const message = parsed.data.message ?? (typeof inner === 'string' ? inner : undefined);
  if (code === undefined || message === undefined) return undefined;
  return { code, message };
};

/** Parses an answer with its schema; a mismatch is a protocol error that names the call and the path. */
export const parseAnswer = <S extends z.ZodType>(
  schema: S,
  body: unknown,
  what: string,
  endpoint?: string,
): z.output<S> => {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new EtcdProtocolError(
    `${what}: unexpected answer from ${endpoint ?? 'etcd'} at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    { endpoint, cause: r.error },
  );
};
