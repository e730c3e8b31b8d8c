import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type Server } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster } from '../names.ts';
import { issueCa, issueLeaf, type KeyPair } from './issue.ts';
import { peerSans, serverNameOf, serverSans } from './sans.ts';

const c: Cluster = { metadata: { name: 'main', namespace: 'prod' }, spec: { tls: {} } };
const DOMAIN = 'cluster.local';
const DAY_MS = 86_400_000;
// The handshakes check validity against the real clock, so issue at it (whole seconds: certificates hold no less).
const now = new Date(Math.floor(Date.now() / 1000) * 1000);

/** Extensions as openssl prints them (an independent reader): header line → value line. */
const extensionsOf = (pem: string) => {
  const out = execFileSync(
    'openssl',
    [
      'x509',
      '-noout',
      '-ext',
      'basicConstraints,keyUsage,extendedKeyUsage,subjectAltName,subjectKeyIdentifier,authorityKeyIdentifier',
    ],
    { input: pem, encoding: 'utf8' },
  );
  const lines = out.split('\n');
  const r: Record<string, string> = {};
  for (let i = 0; i + 1 < lines.length; i += 2) r[(lines[i] ?? '').trim()] = (lines[i + 1] ?? '').trim();
  return r;
};

let peerCa: KeyPair;
let clientCa: KeyPair;
let peer: KeyPair;
let server: KeyPair;
let client: KeyPair;

beforeAll(async () => {
  [peerCa, clientCa] = await Promise.all([
    issueCa({ cn: 'main-etcd-peer-ca', now }),
    issueCa({ cn: 'main-etcd-client-ca', now }),
  ]);
  [peer, server, client] = await Promise.all([
    issueLeaf({
      ca: peerCa,
      cn: 'main-etcd-peer',
      ...peerSans(c, DOMAIN),
      usages: ['serverAuth', 'clientAuth'],
      now,
    }),
    issueLeaf({
      ca: clientCa,
      cn: 'main-etcd-server',
      ...serverSans(c, DOMAIN),
      usages: ['serverAuth', 'clientAuth'],
      now,
    }),
    issueLeaf({ ca: clientCa, cn: 'tideway', usages: ['clientAuth'], now }),
  ]);
});

describe('issuing certificates', () => {
  it('makes a P-256 CA that signs leaves only, valid ten years from five minutes ago', () => {
    const x = new X509Certificate(clientCa.cert);
    expect(x.ca).toBe(true);
    expect(x.subject).toBe('CN=main-etcd-client-ca');
    expect(x.issuer).toBe(x.subject);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(x.validFromDate.getTime()).toBe(now.getTime() - 5 * 60_000);
    expect(x.validToDate.getTime()).toBe(now.getTime() + 3650 * DAY_MS);
    expect(x.checkPrivateKey(createPrivateKey(clientCa.key))).toBe(true);
    expect(clientCa.key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/); // PKCS#8
    const ext = extensionsOf(clientCa.cert);
    expect(ext['X509v3 Basic Constraints: critical']).toBe('CA:TRUE, pathlen:0');
    expect(ext['X509v3 Key Usage: critical']).toBe('Digital Signature, Certificate Sign, CRL Sign');
    expect(ext['X509v3 Subject Key Identifier:']).toMatch(/^([0-9A-F]{2}:){19}[0-9A-F]{2}$/);
    // 16 bytes, positive, no redundant leading zero.
    expect(x.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
  });

  it('makes a server certificate for every member, the client Service and etcdctl inside a pod', () => {
    const x = new X509Certificate(server.cert);
    expect(x.ca).toBe(false);
    expect(x.issuer).toBe('CN=main-etcd-client-ca');
    expect(x.subjectAltName).toBe(
      'DNS:*.main-etcd-peers.prod.svc, DNS:*.main-etcd-peers.prod.svc.cluster.local, DNS:main-etcd.prod.svc, DNS:main-etcd.prod.svc.cluster.local, DNS:main-etcd.prod, DNS:main-etcd, DNS:localhost, IP Address:127.0.0.1',
    );
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(x.validFromDate.getTime()).toBeLessThanOrEqual(now.getTime() - 4 * 60_000);
    expect(x.validToDate.getTime()).toBe(now.getTime() + 365 * DAY_MS);
    expect(x.checkPrivateKey(createPrivateKey(server.key))).toBe(true);
    expect(x.checkPrivateKey(createPrivateKey(client.key))).toBe(false);
    const ca = new X509Certificate(clientCa.cert);
    expect(x.checkIssued(ca)).toBe(true);
    expect(x.verify(ca.publicKey)).toBe(true);
    expect(x.verify(new X509Certificate(peerCa.cert).publicKey)).toBe(false);
    const ext = extensionsOf(server.cert);
    expect(ext['X509v3 Basic Constraints: critical']).toBe('CA:FALSE');
    expect(ext['X509v3 Key Usage: critical']).toBe('Digital Signature');
    expect(ext['X509v3 Authority Key Identifier:']).toBe(
      extensionsOf(clientCa.cert)['X509v3 Subject Key Identifier:'],
    );
    expect(ext['X509v3 Subject Key Identifier:']).not.toBe(ext['X509v3 Authority Key Identifier:']);
  });

  it('makes a peer certificate for every member and the peers Service, from the peer CA', () => {
    const x = new X509Certificate(peer.cert);
    expect(x.subjectAltName).toBe(
      'DNS:*.main-etcd-peers.prod.svc, DNS:*.main-etcd-peers.prod.svc.cluster.local, DNS:main-etcd-peers.prod.svc',
    );
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(x.verify(new X509Certificate(peerCa.cert).publicKey)).toBe(true);
    expect(x.checkHost('main-etcd-4.main-etcd-peers.prod.svc')).toBe('*.main-etcd-peers.prod.svc');
  });

  it('makes a client certificate without names, for client authentication only', () => {
    const x = new X509Certificate(client.cert);
    expect(x.subject).toBe('CN=tideway');
    expect(x.subjectAltName).toBeUndefined();
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(x.verify(new X509Certificate(clientCa.cert).publicKey)).toBe(true);
    expect(x.serialNumber).not.toBe(new X509Certificate(server.cert).serialNumber);
  });

  it('takes the validity it is given, and refuses a CA key that is not the CA’s or an address it cannot write', async () => {
    const x = new X509Certificate((await issueCa({ cn: 'short', now, days: 2 })).cert);
    expect(x.validToDate.getTime()).toBe(now.getTime() + 2 * DAY_MS);
    await expect(
      issueLeaf({ ca: { cert: clientCa.cert, key: peerCa.key }, cn: 'x', usages: ['clientAuth'], now }),
    ).rejects.toThrow(/CA key does not belong/);
    // After 2049 a validity date is a GeneralizedTime (RFC 5280).
    const late = new Date('2045-01-01T00:00:00Z');
    const y = new X509Certificate((await issueCa({ cn: 'late', now: late })).cert);
    expect(y.validToDate.getTime()).toBe(late.getTime() + 3650 * DAY_MS);
    await expect(issueLeaf({ ca: clientCa, cn: 'x', ips: ['::1'], usages: [], now })).rejects.toThrow(/IPv4/);
  });

  it('is accepted by openssl, strictly, for the purpose each certificate serves', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tideway-issue-'));
    try {
      const verify = async (ca: KeyPair, leaf: KeyPair, purpose: string) => {
        await writeFile(join(dir, 'ca.crt'), ca.cert);
        await writeFile(join(dir, 'leaf.crt'), leaf.cert);
        const args = [
          'verify',
          '-x509_strict',
          '-purpose',
          purpose,
          '-CAfile',
          join(dir, 'ca.crt'),
          join(dir, 'leaf.crt'),
        ];
        return execFileSync('openssl', args, { encoding: 'utf8', stdio: 'pipe' }).trim();
      };
      const ok = `${join(dir, 'leaf.crt')}: OK`;
      expect(await verify(clientCa, server, 'sslserver')).toBe(ok);
      expect(await verify(clientCa, server, 'sslclient')).toBe(ok);
      expect(await verify(clientCa, client, 'sslclient')).toBe(ok);
      expect(await verify(peerCa, peer, 'sslserver')).toBe(ok);
      expect(await verify(peerCa, peer, 'sslclient')).toBe(ok);
      await expect(verify(clientCa, client, 'sslserver')).rejects.toThrow(/unsuitable certificate purpose/);
      await expect(verify(clientCa, peer, 'sslclient')).rejects.toThrow(/unable to get local issuer/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a TLS handshake with the issued certificates', () => {
  let tlsServer: Server;
  let port: number;

  beforeAll(async () => {
    // What a member does on its client port: --cert-file, --trusted-ca-file, --client-cert-auth.
    tlsServer = createServer({
      cert: server.cert,
      key: server.key,
      ca: clientCa.cert,
      requestCert: true,
      rejectUnauthorized: true,
    });
    tlsServer.on('secureConnection', (socket) => socket.end('ok'));
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    port = (tlsServer.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => tlsServer.close(() => resolve())));

  /** 'ok' when the server accepted us and answered, else the error code the client saw. */
  const dial = (o: { servername: string; as?: KeyPair }) =>
    new Promise<string>((resolve) => {
      const s = connect({
        host: '127.0.0.1',
        port,
        servername: o.servername,
        ca: clientCa.cert,
        ...(o.as ? { cert: o.as.cert, key: o.as.key } : {}),
      });
      s.on('data', (d) => {
        resolve(d.toString());
        s.destroy();
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      s.on('close', () => resolve('closed'));
    });

  it('connects Tideway to a member’s IP by the cluster’s server name with the client certificate', async () => {
    expect(await dial({ servername: serverNameOf(c), as: client })).toBe('ok');
    expect(await dial({ servername: 'main-etcd-2.main-etcd-peers.prod.svc', as: client })).toBe('ok');
  });

  it('lets etcd’s gateway in with the server certificate as its client certificate', async () => {
    expect(await dial({ servername: 'localhost', as: server })).toBe('ok');
  });

  it('refuses a name the certificate does not hold', async () => {
    expect(await dial({ servername: 'other-etcd.ns.svc', as: client })).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('refuses a peer certificate, or none, on the client port', async () => {
    // Node's server checks the chain after the handshake and hangs up without an alert (etcd sends
    // one): the client sees the connection end, or reset, never an answer.
    expect(['closed', 'ECONNRESET']).toContain(await dial({ servername: serverNameOf(c), as: peer }));
    expect(await dial({ servername: serverNameOf(c) })).toMatch(/CERTIFICATE_REQUIRED/);
  });
});
