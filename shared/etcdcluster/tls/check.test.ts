import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster } from '../names.ts';
import { type CheckedPart, checkPart, checkSet, isProblem, type TlsFiles, type TlsProblem } from './check.ts';
import { issueCa, issueLeaf, type KeyPair, type Usage } from './issue.ts';
import { peerSans, requiredHosts, serverSans, type TlsPart } from './sans.ts';

const c: Cluster = { metadata: { name: 'main', namespace: 'prod' }, spec: { tls: {} } };
const DOMAIN = 'cluster.local';
const NOW = new Date('2030-06-01T00:00:00Z');
const DAY_MS = 86_400_000;
const SECRET = { peer: 'main-etcd-peer-tls', server: 'main-etcd-server-tls', client: 'main-etcd-client-tls' };
const BOTH: Usage[] = ['serverAuth', 'clientAuth'];

const filesOf = (leaf: KeyPair, ca: KeyPair): TlsFiles => ({
  'tls.crt': leaf.cert,
  'tls.key': leaf.key,
  'ca.crt': ca.cert,
});
const check = (part: TlsPart, files: TlsFiles, now = NOW) =>
  checkPart({ part, secret: SECRET[part], files, hosts: requiredHosts(c, part), now });
const passed = (r: CheckedPart | TlsProblem): CheckedPart => {
  if (isProblem(r)) throw new Error(`expected a pass: ${r.message}`);
  return r;
};
const problem = (r: CheckedPart | TlsProblem | undefined): TlsProblem => {
  if (!isProblem(r)) throw new Error('expected a problem');
  // One sentence that never carries key material.
  expect(r.message).not.toMatch(/BEGIN|PRIVATE|[A-Za-z0-9+/]{40}/);
  expect(r.message.trim().endsWith('.')).toBe(true);
  return r;
};

let peerCa: KeyPair;
let clientCa: KeyPair;
let otherCa: KeyPair;
let peer: KeyPair;
let server: KeyPair;
let client: KeyPair;
const leaf = (o: { ca: KeyPair; dns?: readonly string[]; cn?: string; usages?: Usage[] }) =>
  issueLeaf({ ca: o.ca, cn: o.cn ?? 'leaf', dns: o.dns ?? [], usages: o.usages ?? BOTH, now: NOW });

beforeAll(async () => {
  [peerCa, clientCa, otherCa] = (await Promise.all(
    ['peer-ca', 'client-ca', 'other-ca'].map((cn) => issueCa({ cn, now: NOW })),
  )) as [KeyPair, KeyPair, KeyPair];
  [peer, server, client] = await Promise.all([
    leaf({ ca: peerCa, ...peerSans(c, DOMAIN) }),
    leaf({ ca: clientCa, ...serverSans(c, DOMAIN) }),
    leaf({ ca: clientCa, cn: 'tideway', usages: ['clientAuth'] }),
  ]);
});

describe('checking a TLS Secret', () => {
  it('passes the certificates Tideway issues, and tells when the earliest ends', () => {
    const [p, s, cl] = [
      passed(check('peer', filesOf(peer, peerCa))),
      passed(check('server', filesOf(server, clientCa))),
      passed(check('client', filesOf(client, clientCa))),
    ];
    expect(s.notAfter).toEqual(new Date(NOW.getTime() + 365 * DAY_MS));
    expect(s.leaf.subject).toBe('CN=leaf');
    expect(s.ca.map((x) => x.subject)).toEqual(['CN=client-ca']);
    expect(checkSet({ peer: p, server: s, client: cl, secrets: SECRET })).toBeUndefined();
  });

  it('names the Secret and the key that is missing or unreadable', () => {
    const files = filesOf(server, clientCa);
    for (const key of ['tls.crt', 'tls.key', 'ca.crt'] as const) {
      const r = problem(check('server', { ...files, [key]: undefined }));
      expect(r).toMatchObject({ reason: 'TLSSecretInvalid' });
      expect(r.message).toContain(`Secret main-etcd-server-tls has no ${key}`);
    }
    expect(problem(check('server', { ...files, 'tls.crt': 'garbage' })).message).toMatch(
      /^tls.crt in Secret main-etcd-server-tls holds no readable PEM certificate/,
    );
    expect(problem(check('server', { ...files, 'ca.crt': ' \n' })).message).toContain('has no ca.crt');
    expect(problem(check('server', { ...files, 'tls.key': server.cert })).message).toMatch(
      /^tls.key in Secret main-etcd-server-tls is not a readable PEM private key/,
    );
  });

  it('refuses what etcd refuses: a certificate not valid yet, a CA file with a key in it', async () => {
    const early = await issueLeaf({
      ca: clientCa,
      cn: 'tideway',
      usages: ['clientAuth'],
      now: new Date(NOW.getTime() + 2 * DAY_MS),
    });
    expect(problem(check('client', filesOf(early, clientCa))).message).toMatch(/not valid before/);
    // Minutes ahead is clock skew between issuer and here: fine.
    const skewed = await issueLeaf({
      ca: clientCa,
      cn: 'tideway',
      usages: ['clientAuth'],
      now: new Date(NOW.getTime() + 9 * 60_000),
    });
    passed(check('client', filesOf(skewed, clientCa)));
    const withKey = { ...filesOf(client, clientCa), 'ca.crt': clientCa.cert + clientCa.key };
    expect(problem(check('client', withKey)).message).toMatch(/holds a private key block/);
  });

  it('refuses a key that is not the certificate’s', () => {
    const r = problem(check('server', { ...filesOf(server, clientCa), 'tls.key': client.key }));
    expect(r.message).toMatch(
      /^tls.key in Secret main-etcd-server-tls does not belong to the certificate in tls.crt/,
    );
  });

  it('tells when the certificate or its CA expired and where to renew it', async () => {
    const end = new Date(NOW.getTime() + 365 * DAY_MS);
    expect(isProblem(check('server', filesOf(server, clientCa), end))).toBe(false);
    const r = problem(check('server', filesOf(server, clientCa), new Date(end.getTime() + 1000)));
    expect(r).toEqual({
      reason: 'TLSCertificateExpired',
      message: `The certificate in Secret main-etcd-server-tls (tls.crt) expired on ${end.toISOString()}: renew it in Secret main-etcd-server-tls.`,
    });
    // A leaf that outlives its CA: the chain ends with the CA.
    const shortCa = await issueCa({ cn: 'short-ca', now: NOW, days: 2 });
    const later = new Date(NOW.getTime() + 3 * DAY_MS);
    const e = problem(
      check('client', filesOf(await leaf({ ca: shortCa, usages: ['clientAuth'] }), shortCa), later),
    );
    expect(e).toMatchObject({ reason: 'TLSCertificateExpired' });
    expect(e.message).toMatch(
      /^The CA certificate CN=short-ca that signs Secret main-etcd-client-tls's tls.crt expired on/,
    );
  });

  it('refuses a certificate its ca.crt did not sign', () => {
    const r = problem(check('server', filesOf(server, peerCa)));
    expect(r.message).toMatch(/is not signed by a CA in its ca.crt/);
    // Names and key identifiers match, the signature does not.
    const der = new X509Certificate(server.cert).raw;
    der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 0x01;
    const forged = `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`;
    expect(new X509Certificate(forged).checkIssued(new X509Certificate(clientCa.cert))).toBe(true);
    const f = problem(check('server', { ...filesOf(server, clientCa), 'tls.crt': forged }));
    expect(f.message).toMatch(/is not signed by a CA in its ca.crt/);
  });

  it('names the member name or Service name a certificate does not cover', async () => {
    const noWildcard = await leaf({
      ca: peerCa,
      dns: ['main-etcd-peers.prod.svc', 'main-etcd-0.main-etcd-peers.prod.svc'],
    });
    expect(problem(check('peer', filesOf(noWildcard, peerCa))).message).toBe(
      "The certificate in Secret main-etcd-peer-tls (tls.crt) does not cover every member's name <member>.main-etcd-peers.prod.svc: reissue it with the DNS name *.main-etcd-peers.prod.svc among its subject alternative names.",
    );
    const noPeers = await leaf({
      ca: peerCa,
      dns: ['*.main-etcd-peers.prod.svc', '*.main-etcd-peers.prod.svc.cluster.local'],
    });
    expect(problem(check('peer', filesOf(noPeers, peerCa))).message).toContain(
      'does not cover main-etcd-peers.prod.svc: reissue it with the DNS name main-etcd-peers.prod.svc',
    );
    const noServerName = await leaf({ ca: clientCa, dns: ['*.main-etcd-peers.prod.svc', 'main-etcd'] });
    expect(problem(check('server', filesOf(noServerName, clientCa))).message).toContain(
      'does not cover main-etcd.prod.svc',
    );
    // As in Go, a CN is no host name, even without SANs.
    const cnOnly = await leaf({ ca: peerCa, cn: 'main-etcd-peers.prod.svc' });
    const files = filesOf(cnOnly, peerCa);
    const r = checkPart({
      part: 'peer',
      secret: SECRET.peer,
      files,
      hosts: ['main-etcd-peers.prod.svc'],
      now: NOW,
    });
    expect(problem(r).message).toContain('does not cover main-etcd-peers.prod.svc');
  });

  it('wants client authentication on a server certificate, for etcd’s gateway', async () => {
    const serverOnly = await leaf({ ca: clientCa, ...serverSans(c, DOMAIN), usages: ['serverAuth'] });
    const r = problem(check('server', filesOf(serverOnly, clientCa)));
    expect(r.message).toMatch(/lacks extended key usage clientAuth/);
    expect(r.message).toMatch(
      /etcd’s gateway dials the member’s own gRPC port with it as its client certificate/,
    );
    const clientAsServer = await leaf({ ca: clientCa, usages: ['serverAuth'] });
    expect(problem(check('client', filesOf(clientAsServer, clientCa))).message).toMatch(
      /main-etcd-client-tls \(tls.crt\) lacks extended key usage clientAuth/,
    );
    const peerClientOnly = await leaf({ ca: peerCa, ...peerSans(c, DOMAIN), usages: ['clientAuth'] });
    expect(problem(check('peer', filesOf(peerClientOnly, peerCa))).message).toMatch(
      /lacks extended key usage serverAuth/,
    );
    // No extended key usage at all: every use is allowed.
    const anyUse = await leaf({ ca: peerCa, ...peerSans(c, DOMAIN), usages: [] });
    passed(check('peer', filesOf(anyUse, peerCa)));
  });

  it('refuses client and server certificates that the other side does not trust', async () => {
    const p = passed(check('peer', filesOf(peer, peerCa)));
    const s = passed(check('server', filesOf(server, clientCa)));
    const cl = passed(check('client', filesOf(client, clientCa)));
    const otherClient = passed(
      check('client', filesOf(await leaf({ ca: otherCa, usages: ['clientAuth'] }), otherCa)),
    );
    expect(problem(checkSet({ peer: p, server: s, client: otherClient, secrets: SECRET })).message).toBe(
      "The client certificate in Secret main-etcd-client-tls is not signed by a CA in ca.crt of Secret main-etcd-server-tls, which members trust for clients (--trusted-ca-file): issue it from that CA, or add its CA to main-etcd-server-tls's ca.crt.",
    );
    // The server's ca.crt trusts both CAs, but Tideway's (client.ca.crt) knows only one.
    const bundle = { ...clientCa, cert: clientCa.cert + otherCa.cert };
    const otherServer = passed(
      check('server', filesOf(await leaf({ ca: otherCa, ...serverSans(c, DOMAIN) }), bundle)),
    );
    expect(problem(checkSet({ peer: p, server: otherServer, client: cl, secrets: SECRET })).message).toMatch(
      /^The server certificate in Secret main-etcd-server-tls is not signed by a CA in ca.crt of Secret main-etcd-client-tls, which Tideway verifies members with/,
    );
  });

  it('tells problems from passes', () => {
    expect(isProblem({ reason: 'TLSSecretInvalid', message: 'x' })).toBe(true);
    expect(isProblem({ reason: 'TLSCertificateExpired', message: 'x' })).toBe(true);
    expect(isProblem({ reason: 'Other', message: 'x' })).toBe(false);
    expect(isProblem(undefined)).toBe(false);
    expect(isProblem(null)).toBe(false);
    expect(isProblem(passed(check('client', filesOf(client, clientCa))))).toBe(false);
  });
});

describe('checking Secrets made by openssl', () => {
  const run = promisify(execFile);
  let dir: string;
  const f = (name: string) => join(dir, name);
  const read = (name: string) => readFile(f(name), 'utf8');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

  /** A key and a certificate signed by `ca` with the given extensions (openssl x509 -req). */
  const sign = async (name: string, ca: string, ext: string) => {
    await run('openssl', [
      'req',
      ...ec,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
      '-subj',
      `/CN=${name}`,
    ]);
    await writeFile(f(`${name}.ext`), ext);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f(`${ca}.crt`),
      '-CAkey',
      f(`${ca}.key`),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.crt`),
    ]);
  };
  const root = (name: string) =>
    run('openssl', [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.crt`),
      '-subj',
      `/CN=${name}`,
      '-days',
      '3',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  const san = (s: { dns: string[]; ips: string[] }) =>
    `subjectAltName=${[...s.dns.map((d) => `DNS:${d}`), ...s.ips.map((i) => `IP:${i}`)].join(',')}\n`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-tls-check-'));
    await Promise.all([root('ossl-root'), root('ossl-peer-root')]);
    await sign(
      'ossl-int',
      'ossl-root',
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n',
    );
    await sign('server', 'ossl-int', `${san(serverSans(c, DOMAIN))}extendedKeyUsage=serverAuth,clientAuth\n`);
    await sign('client', 'ossl-int', 'extendedKeyUsage=clientAuth\n');
    // A peer certificate without extended key usage, its key in SEC1 ("EC PRIVATE KEY").
    await sign('peer', 'ossl-peer-root', san(peerSans(c, DOMAIN)));
    await run('openssl', ['ec', '-in', f('peer.key'), '-out', f('peer.sec1.key')]);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('accepts them, with intermediates after the leaf and a SEC1 key', async () => {
    const now = new Date();
    const [root, int, peerRoot] = await Promise.all([
      read('ossl-root.crt'),
      read('ossl-int.crt'),
      read('ossl-peer-root.crt'),
    ]);
    const part = async (p: TlsPart, o: { name: string; chain: string; ca: string; key?: string }) =>
      passed(
        checkPart({
          part: p,
          secret: SECRET[p],
          files: {
            'tls.crt': (await read(`${o.name}.crt`)) + o.chain,
            'tls.key': await read(o.key ?? `${o.name}.key`),
            'ca.crt': o.ca,
          },
          hosts: requiredHosts(c, p),
          now,
        }),
      );
    const peerKey = await read('peer.sec1.key');
    expect(peerKey).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    const p = await part('peer', { name: 'peer', chain: '', ca: peerRoot, key: 'peer.sec1.key' });
    const s = await part('server', { name: 'server', chain: int, ca: root });
    const cl = await part('client', { name: 'client', chain: int, ca: root });
    expect(s.intermediates.map((x) => x.subject)).toEqual(['CN=ossl-int']);
    expect(checkSet({ peer: p, server: s, client: cl, secrets: SECRET })).toBeUndefined();
  });

  it('refuses a chain through a certificate that is no CA', async () => {
    await sign('sub', 'client', 'extendedKeyUsage=clientAuth\n');
    const r = checkPart({
      part: 'client',
      secret: SECRET.client,
      files: {
        'tls.crt': (await read('sub.crt')) + (await read('client.crt')) + (await read('ossl-int.crt')),
        'tls.key': await read('sub.key'),
        'ca.crt': await read('ossl-root.crt'),
      },
      hosts: [],
      now: new Date(),
    });
    expect(problem(r).message).toMatch(/not signed by a CA in its ca.crt/);
  });

  it('refuses what etcd refuses: a SHA-1 signature', async () => {
    await sign('sha1', 'ossl-int', 'extendedKeyUsage=clientAuth\n');
    // The same request signed again with SHA-1.
    await run('openssl', [
      'x509',
      '-req',
      '-sha1',
      '-in',
      f('sha1.csr'),
      '-CA',
      f('ossl-int.crt'),
      '-CAkey',
      f('ossl-int.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      f('sha1.ext'),
      '-out',
      f('sha1.crt'),
    ]);
    const files = {
      'tls.crt': (await read('sha1.crt')) + (await read('ossl-int.crt')),
      'tls.key': await read('sha1.key'),
      'ca.crt': await read('ossl-root.crt'),
    };
    const r = checkPart({ part: 'client', secret: SECRET.client, files, hosts: [], now: new Date() });
    expect(problem(r).message).toMatch(/sha1WithRSAEncryption|ecdsa-with-SHA1/);
  });

  it('refuses a leaf whose intermediate is missing', async () => {
    const r = checkPart({
      part: 'server',
      secret: SECRET.server,
      files: {
        'tls.crt': await read('server.crt'),
        'tls.key': await read('server.key'),
        'ca.crt': await read('ossl-root.crt'),
      },
      hosts: requiredHosts(c, 'server'),
      now: new Date(),
    });
    expect(problem(r).message).toMatch(
      /not signed by a CA in its ca.crt: put the issuing CA into ca.crt, and any intermediates after the leaf/,
    );
  });
});
