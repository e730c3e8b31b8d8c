import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, openSync, readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { binDir, cacheDir } from '../../infra/testbed/paths.ts';
import { freePort } from '../../infra/testbed/process/ports.ts';
import type { EtcdClient } from '../../shared/etcd/client.ts';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';

const run = promisify(execFile);

/** The test bed's etcd build; the test fails, clearly, when it is not there. */
export const etcdBinary = (): string => {
  const bin = join(binDir(), 'etcd');
  if (!existsSync(bin))
    throw new Error(`${bin} is missing: the test bed builds it (infra/testbed/build/build-go.sh … etcd)`);
  return bin;
};

export const etcdVersion = async (bin = etcdBinary()): Promise<string> => {
  const { stdout } = await run(bin, ['--version']);
  const v = /etcd Version: (\S+)/.exec(stdout)?.[1];
  if (!v) throw new Error(`etcd --version said: ${stdout}`);
  return v;
};

/**
 * An etcdutl from the test bed's build when there is one: the etcd images' programs
 * (images/etcd-v<version>/, the same version as bin/etcd first), or bin/etcdutl, or
 * $TIDEWAY_ETCDUTL_BIN. Undefined if none.
 */
export const findEtcdutl = async (): Promise<string | undefined> => {
  if (process.env.TIDEWAY_ETCDUTL_BIN) return process.env.TIDEWAY_ETCDUTL_BIN;
  const version = await etcdVersion();
  const images = join(cacheDir(), 'images');
  const dirs = existsSync(images) ? (await readdir(images)).filter((d) => d.startsWith('etcd-')) : [];
  dirs.sort((a, b) => Number(b === `etcd-v${version}`) - Number(a === `etcd-v${version}`));
  const candidates = [...dirs.map((d) => join(images, d, 'etcdutl')), join(binDir(), 'etcdutl')];
  return candidates.find((c) => existsSync(c));
};

/**
 * An etcd 3.5 from the test bed's etcd images (images/etcd-v3.5.x/etcd), when built: the gateway of
 * 3.5 is grpc-gateway v1, whose error bodies differ from 3.6's.
 */
export const findEtcd35 = (): string | undefined => {
  // Or one at hand ($TIDEWAY_ETCD35_BIN, e.g. built by hand for a one-off check).
  if (process.env.TIDEWAY_ETCD35_BIN) return process.env.TIDEWAY_ETCD35_BIN;
  const images = join(cacheDir(), 'images');
  if (!existsSync(images)) return undefined;
  const dir = readdirSync(images)
    .filter((d) => /^etcd-v3\.5\./.test(d))
    .sort()
    .at(-1);
  const bin = dir ? join(images, dir, 'etcd') : undefined;
  return bin && existsSync(bin) ? bin : undefined;
};

/**
 * Distinct free TCP ports on 127.0.0.1, from the test bed's range below the kernel's ephemeral
 * one: a port picked by listening on 0 and closing again could be taken by an outgoing
 * connection's local port before etcd binds it, and that member would never start (a CI run saw
 * a 3-member cluster come up with two).
 */
export const freePorts = async (n: number): Promise<number[]> => {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
};

export type TlsFiles = { ca: string; cert: string; key: string };

export type EtcdMember = {
  readonly name: string;
  readonly clientURL: string;
  readonly peerURL: string;
  readonly dataDir: string;
  process?: ChildProcess;
};

/** etcd processes of one test: each on its own 127.0.0.1 ports and data dir under `dir`. */
export class LocalEtcd {
  readonly #dir: string;
  readonly #tls: TlsFiles | undefined;
  readonly #token = `tideway-test-${process.pid}-${Date.now()}`;
  readonly members: EtcdMember[] = [];

  readonly #bin: string;

  constructor(dir: string, tls?: TlsFiles, bin = etcdBinary()) {
    this.#dir = dir;
    this.#tls = tls;
    this.#bin = bin;
  }

  get scheme() {
    return this.#tls ? 'https' : 'http';
  }

  /** Describes a member (ports picked now); `start` runs it. */
  async define(name: string): Promise<EtcdMember> {
    const [client, peer] = await freePorts(2);
    const m = {
      name,
      clientURL: `${this.scheme}://127.0.0.1:${client}`,
      peerURL: `${this.scheme}://127.0.0.1:${peer}`,
      dataDir: join(this.#dir, name),
    };
    this.members.push(m);
    return m;
  }

  /** Starts `m` into a cluster of `cluster` (new: all members at once; existing: joining one). */
  async start(
    m: EtcdMember,
    cluster: readonly EtcdMember[],
    state: 'new' | 'existing',
    extra: string[] = [],
  ) {
    await mkdir(m.dataDir, { recursive: true });
    const tls = this.#tls;
    const tlsFlags = tls
      ? [
          `--cert-file=${tls.cert}`,
          `--key-file=${tls.key}`,
          `--trusted-ca-file=${tls.ca}`,
          '--client-cert-auth',
          `--peer-cert-file=${tls.cert}`,
          `--peer-key-file=${tls.key}`,
          `--peer-trusted-ca-file=${tls.ca}`,
          '--peer-client-cert-auth',
        ]
      : [];
    const args = [
      `--name=${m.name}`,
      `--data-dir=${m.dataDir}`,
      `--listen-client-urls=${m.clientURL}`,
      `--advertise-client-urls=${m.clientURL}`,
      `--listen-peer-urls=${m.peerURL}`,
      `--initial-advertise-peer-urls=${m.peerURL}`,
      `--initial-cluster=${cluster.map((c) => `${c.name}=${c.peerURL}`).join(',')}`,
      `--initial-cluster-state=${state}`,
      `--initial-cluster-token=${this.#token}`,
      '--log-level=warn',
      ...tlsFlags,
      ...extra,
    ];
    const log = openSync(join(this.#dir, `${m.name}.log`), 'a');
    m.process = spawn(this.#bin, args, { stdio: ['ignore', log, log] });
  }

  /** Stops every process it started. */
  async stop() {
    await Promise.all(this.members.map((m) => this.stopMember(m)));
  }

  /** SIGTERM, then SIGKILL after 5 s. */
  async stopMember(m: EtcdMember) {
    const p = m.process;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])) return;
    p.kill('SIGKILL');
    await exited;
  }

  /** A member's log, for a failure's message. */
  log(m: EtcdMember) {
    return readFile(join(this.#dir, `${m.name}.log`), 'utf8').catch(() => '');
  }
}

/**
 * A snapshot file as a backup is used: `etcdutl snapshot restore` into a new one-member cluster on
 * this machine (under `dir`), started; `use` reads it through a client, then it stops.
 */
export const withRestoredSnapshot = async <T>(
  etcdutl: string,
  file: string,
  dir: string,
  use: (c: EtcdClient) => Promise<T>,
): Promise<T> => {
  const restored = new LocalEtcd(dir);
  const r0 = await restored.define('r0');
  await run(etcdutl, [
    'snapshot',
    'restore',
    file,
    `--data-dir=${r0.dataDir}`,
    '--name=r0',
    `--initial-cluster=r0=${r0.peerURL}`,
    `--initial-advertise-peer-urls=${r0.peerURL}`,
  ]);
  await restored.start(r0, [r0], 'new');
  const c = createEtcdClient({ endpoints: [r0.clientURL] });
  try {
    await until('the restored member serving', 30_000, () => c.status(r0.clientURL, { timeoutMs: 2000 }));
    return await use(c);
  } finally {
    c.close();
    await restored.stop();
  }
};

/** Polls `fn` until it returns non-undefined or `ms` pass; the last error in the message. */
export const until = async <T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> => {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    await sleep(200);
  }
  throw new Error(`${what}: not within ${ms} ms${last ? ` (last: ${(last as Error).message})` : ''}`);
};

/** A CA, and one certificate for servers and clients alike (IP 127.0.0.1), made with openssl. */
export const makeCerts = async (
  dir: string,
): Promise<TlsFiles & { clientOnlyCert: string; clientOnlyKey: string }> => {
  await mkdir(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-subj',
    '/CN=tideway-test-ca',
    '-days',
    '2',
  ]);
  const sign = async (name: string, cn: string, ext: string) => {
    await run('openssl', [
      'req',
      ...ec,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
      '-subj',
      `/CN=${cn}`,
    ]);
    await writeFile(f(`${name}.ext`), ext);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
    ]);
  };
  // etcd's gateway dials etcd's own gRPC server with the server certificate: it needs clientAuth too.
  await sign(
    'server',
    'etcd',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  await sign('client', 'tideway', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: f('ca.crt'),
    cert: f('server.crt'),
    key: f('server.key'),
    clientOnlyCert: f('client.crt'),
    clientOnlyKey: f('client.key'),
  };
};
