// These lists are the one source of what spec.config may hold: the CRD's CEL rules are generated
// from them (shared/rediscluster/admission.ts, `npm run gen:api`) and configProblems() checks the
// same again at the function's boundary.

/** Directives Tideway sets itself; a user's `config` may not touch them. */
export const OWNED_DIRECTIVES = [
  'port',
  'bind',
  'dir',
  'dbfilename',
  'appendfilename',
  'appenddirname',
  'replicaof',
  'slaveof',
  'masterauth',
  'masteruser',
  'requirepass',
  'user',
  'aclfile',
  'include',
  'rename-command',
  'daemonize',
  'supervised',
  'pidfile',
  'logfile',
  'unixsocket',
  'unixsocketperm',
  'protected-mode',
  'cluster-enabled',
  'cluster-config-file',
  'tls-port',
  'tls-cert-file',
  'tls-key-file',
  'tls-ca-cert-file',
  'tls-ca-cert-dir',
  'tls-key-file-pass',
  'tls-client-cert-file',
  'tls-client-key-file',
  'tls-client-key-file-pass',
  'tls-dh-params-file',
  'tls-replication',
  'replica-announce-ip',
  'replica-announce-port',
  'slave-announce-ip',
  'slave-announce-port',
] as const;

/** Directives that would let whoever edits a RedisCluster run code on its servers or reach their disks. */
export const UNSAFE_DIRECTIVES = [
  'loadmodule',
  'enable-module-command',
  'enable-debug-command',
  'enable-protected-configs',
] as const;

/** A redis.conf directive name as written in spec.config; also keeps keys ASCII, so case folding is. */
export const DIRECTIVE_NAME = '^[A-Za-z][A-Za-z0-9-]*$';

/** A whole number as redis.conf reads it; at most 9 digits, so it fits Redis's int (and CEL's int()). */
export const WHOLE_NUMBER = '^[0-9]{1,9}$';

/**
 * Directives whose value Tideway constrains (with Redis's older `slave` aliases, which set the
 * same thing). `yes`: only `yes` (any case). `whole`: a whole number from `min`, and with
 * `belowReplicas` at most replicas - 1.
 */
export const VALUE_RULES = [
  {
    directives: ['replica-read-only', 'slave-read-only'],
    value: { type: 'yes' },
    message:
      'config replica-read-only (slave-read-only) may only be yes: Tideway keeps a restarted server read-only until it gives it a role',
  },
  {
    directives: ['min-replicas-to-write', 'min-slaves-to-write'],
    value: { type: 'whole', min: 0, belowReplicas: true },
    message:
      'config min-replicas-to-write (min-slaves-to-write) must be a whole number from 0 to replicas - 1: a larger one makes the master refuse every write',
  },
  {
    directives: ['min-replicas-max-lag', 'min-slaves-max-lag'],
    value: { type: 'whole', min: 1, belowReplicas: false },
    message: 'config min-replicas-max-lag (min-slaves-max-lag) must be a whole number of seconds, at least 1',
  },
] as const;

export type ValueRule = (typeof VALUE_RULES)[number];

/**
 * What a master of the cluster needs to take writes, as `min-replicas-to-write` and
 * `min-replicas-max-lag` say it: by default, with replicas, one replica in touch within 10 s, so a
 * master cut off from its replicas cannot take writes that a failover would then lose; a single
 * instance needs none. spec.config may set either (or their `slave` aliases; with both, the one
 * redis.conf has last, as Redis reads it). `replicas`: the instances the StatefulSet has now.
 * Set at run time on every server (reconcile, quorum.ts): a change of size restarts nothing.
 */
export const writeQuorum = (user: Record<string, string>, replicas: number) => {
  const given = (rule: ValueRule) => {
    const k = Object.keys(user)
      .sort()
      .findLast((k) => (rule.directives as readonly string[]).includes(lowerAscii(k)));
    return k === undefined ? undefined : Number(user[k]);
  };
  return {
    toWrite: given(VALUE_RULES[1]) ?? (replicas > 1 ? 1 : 0),
    maxLag: given(VALUE_RULES[2]) ?? 10,
  };
};

export type WriteQuorum = ReturnType<typeof writeQuorum>;

/**
 * The quorum every server starts with, whatever the size: the safe value. A server starts fenced
 * (below), and reconcile sets the cluster's quorum before it gives it a role — lowering it for a
 * single instance — so a server reconcile has not reached yet errs towards refusing writes.
 * spec.config may override each (later lines win; the line is left out then).
 */
const QUORUM_DEFAULTS = [
  { directives: VALUE_RULES[1].directives, line: 'min-replicas-to-write 1' },
  { directives: VALUE_RULES[2].directives, line: 'min-replicas-max-lag 10' },
] as const;

/**
 * The start-up quorum lines in Tideway's part of redis.conf. Versions before 2026-11-28 wrote them
 * only when the cluster had replicas: a configuration that differs from today's only by them
 * serves the same (the values are set at run time), so pods that read it are not restarted for
 * them (desired.ts, configFor).
 */
export const QUORUM_LINES: readonly string[] = QUORUM_DEFAULTS.map((d) => d.line);

const lowerAscii = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

const valueOk = (rule: ValueRule, v: string, replicas: number | undefined) => {
  if (rule.value.type === 'yes') return lowerAscii(v) === 'yes';
  if (!new RegExp(WHOLE_NUMBER).test(v)) return false;
  const n = Number(v);
  return n >= rule.value.min && (!rule.value.belowReplicas || replicas === undefined || n <= replicas - 1);
};

/**
 * What is wrong with a spec.config, each problem saying what to fix; empty when nothing is. The
 * same checks as the CRD's rules; without `replicas` the bound that needs it is not checked.
 */
export const configProblems = (user: Record<string, string>, replicas?: number): string[] => {
  const problems: string[] = [];
  const malformed = Object.entries(user).filter(
    ([k, v]) => !new RegExp(DIRECTIVE_NAME).test(k) || /[\r\n]/.test(v),
  );
  if (malformed.length > 0)
    problems.push(
      `config has malformed entries: ${malformed.map(([k]) => JSON.stringify(k)).join(', ')} (a directive name is letters, digits and '-'; a value is one line)`,
    );
  const keys = Object.keys(user).filter((k) => new RegExp(DIRECTIVE_NAME).test(k));
  const named = (list: readonly string[]) => keys.filter((k) => list.includes(lowerAscii(k)));
  const owned = named(OWNED_DIRECTIVES);
  if (owned.length > 0)
    problems.push(`config sets directives Tideway owns: ${owned.join(', ')}; remove them`);
  const unsafe = named(UNSAFE_DIRECTIVES);
  if (unsafe.length > 0)
    problems.push(
      `config sets ${unsafe.join(', ')}, which would let whoever edits the cluster run code on its servers or reach their disks; remove them`,
    );
  for (const rule of VALUE_RULES)
    if (named(rule.directives).some((k) => !valueOk(rule, user[k] ?? '', replicas)))
      problems.push(rule.message);
  return problems;
};

export class ConfigRejected extends Error {
  override readonly name = 'ConfigRejected';
  readonly retry = false;
  readonly reason = 'InvalidConfig';
}

/** A value as redis.conf reads it: quoted when it has spaces, quotes or control characters. */
export const confValue = (v: string) =>
  /^[\x21-\x7e]+$/.test(v) && !/["'\\]/.test(v)
    ? v
    : `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n').replaceAll('\r', '\\r')}"`;

/** Throws ConfigRejected (not worth retrying: the spec must change) when configProblems finds any. */
export const validateConfig = (user: Record<string, string>, replicas?: number) => {
  const problems = configProblems(user, replicas);
  if (problems.length > 0) throw new ConfigRejected(problems.join('; '));
};

/**
 * redis.conf for every instance: Tideway's directives, then the user's in a stable order. The
 * real topology and the write quorum are set over the network at run time (failover and scaling
 * need no restart); the file is the same for every size. `replicas` (spec.replicas) bounds
 * min-replicas-to-write.
 */
export const renderRedisConf = (
  user: Record<string, string> = {},
  o: { authInclude: string; dataDir: string; replicas?: number },
) => {
  validateConfig(user, o.replicas);
  const set = new Set(Object.keys(user).map(lowerAscii));
  const lines = [
    '# Written by Tideway. Edit spec.config of the RedisCluster instead.',
    'port 6379',
    'bind 0.0.0.0',
    'protected-mode no',
    `dir ${o.dataDir}`,
    'dbfilename dump.rdb',
    // Every server starts as a replica of nothing (loopback, a closed port): a restarted master
    // refuses writes and refuses to feed replicas (NOMASTERLINK) until Tideway decides its role,
    // so it can never wipe them with an older or empty data set.
    'replicaof 127.0.0.1 1',
    'replica-read-only yes',
    `include ${o.authInclude}`,
    // Defaults spec.config may override (later lines win). Redis 7 waits 5 s for more replicas
    // before a diskless full sync: every new, restarted or repointed replica would wait too.
    'repl-diskless-sync-delay 1',
    ...QUORUM_DEFAULTS.filter((d) => !d.directives.some((k) => set.has(k))).map((d) => d.line),
    '',
    ...Object.keys(user)
      .sort()
      // As written: a value is redis.conf's own argument syntax (`save: "900 1 300 10"`).
      .map((k) => `${lowerAscii(k)} ${user[k] || '""'}`),
  ];
  return `${lines.join('\n')}\n`;
};

/** The auth include file: the same password for clients and for replication. */
export const renderAuthConf = (password: string) =>
  `requirepass ${confValue(password)}\nmasterauth ${confValue(password)}\n`;
