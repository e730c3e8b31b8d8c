/**
 * Directives Tideway sets itself; a user's `config` may not touch them (the CRD refuses them with
 * a CEL rule; this is the same list, checked again at the function's boundary).
 */
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
  'tls-replication',
  'replica-announce-ip',
  'replica-announce-port',
  'slave-announce-ip',
  'slave-announce-port',
] as const;

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

const DIRECTIVE = /^[a-z][a-z0-9-]*$/;

/**
 * redis.conf for every instance: Tideway's directives, then the user's in a stable order. The
 * real topology is set over the network at run time (failover needs no restart).
 */
export const renderRedisConf = (
  user: Record<string, string> = {},
  o: { authInclude: string; dataDir: string },
) => {
  const owned = new Set<string>(OWNED_DIRECTIVES);
  const bad = Object.keys(user).filter((k) => owned.has(k.toLowerCase()));
  if (bad.length > 0)
    throw new ConfigRejected(`config sets directives Tideway owns: ${bad.join(', ')}; remove them`);
  const malformed = Object.entries(user).filter(
    ([k, v]) => !DIRECTIVE.test(k.toLowerCase()) || /[\r\n]/.test(v),
  );
  if (malformed.length > 0)
    throw new ConfigRejected(
      `config has malformed entries: ${malformed.map(([k]) => JSON.stringify(k)).join(', ')}`,
    );
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
    '',
    ...Object.keys(user)
      .sort()
      // As written: a value is redis.conf's own argument syntax (`save: "900 1 300 10"`).
      .map((k) => `${k.toLowerCase()} ${user[k] || '""'}`),
  ];
  return `${lines.join('\n')}\n`;
};

/** The auth include file: the same password for clients and for replication. */
export const renderAuthConf = (password: string) =>
  `requirepass ${confValue(password)}\nmasterauth ${confValue(password)}\n`;
