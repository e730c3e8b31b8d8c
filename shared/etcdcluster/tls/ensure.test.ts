import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EtcdCluster } from '../../api/generated.ts';
import { ensureTls, RENEW_BEFORE_MS, type TlsReady, type TlsRefusal } from './ensure.ts';
import { issueCa, issueLeaf } from './issue.ts';
import { peerSans, serverSans } from './sans.ts';
import type { SecretStore, StoredSecret } from './store.ts';

const now = new Date('2026-11-26T10:00:00Z');
const DAY = 86_400_000;

/** Secrets in memory, as the API server keeps them: resourceVersion moves on every write. */
const memoryStore = () => {
  const secrets = new Map<string, StoredSecret & { type: string }>();
  let rv = 0;
  const writes: string[] = [];
  const store: SecretStore = {
    get: async (name) => secrets.get(name),
    create: async (name, type, data) => {
      if (secrets.has(name)) return false;
      secrets.set(name, { data, ours: true, resourceVersion: String(++rv), type });
      writes.push(`create ${name}`);
      return true;
    },
    replace: async (name, resourceVersion, type, data) => {
      if (secrets.get(name)?.resourceVersion !== resourceVersion) throw new Error('409 conflict');
      secrets.set(name, { data, ours: true, resourceVersion: String(++rv), type });
      writes.push(`replace ${name}`);
    },
  };
  const put = (name: string, data: Record<string, string>, ours = false) =>
    secrets.set(name, { data, ours, resourceVersion: String(++rv), type: 'kubernetes.io/tls' });
  return { store, secrets, writes, put };
};

const cluster = (tls: NonNullable<EtcdCluster['spec']['tls']>, status: EtcdCluster['status'] = {}) =>
  ({
    apiVersion: 'tideway.dev/v1alpha1',
    kind: 'EtcdCluster',
    metadata: { name: 'main', namespace: 'ns', uid: 'u1' },
    spec: { size: 3, version: '3.6', tls },
    status,
  }) as EtcdCluster;

const ready = (r: TlsReady | TlsRefusal): TlsReady => {
  if (!('client' in r)) throw new Error(`refused: ${r.reason}: ${r.message}`);
  return r;
};
const cert = (s: StoredSecret | undefined) => new X509Certificate(s?.data['tls.crt'] ?? '');

describe('ensureTls: generated material', () => {
  it('makes two CAs and three certificates once, then changes nothing', async () => {
    const m = memoryStore();
    const c = cluster({});
    const first = ready(await ensureTls(m.store, c, { now, domain: 'cluster.local' }));
    expect(m.writes.sort()).toEqual([
      'create main-etcd-ca',
      'create main-etcd-client-tls',
      'create main-etcd-peer-tls',
      'create main-etcd-server-tls',
    ]);
    expect(first.client.serverName).toBe('main-etcd.ns.svc');
    expect(first.client.cert).toBe(m.secrets.get('main-etcd-client-tls')?.data['tls.crt']);
    expect(first.expiresAt.getTime()).toBeGreaterThan(now.getTime() + 364 * DAY);
    // Two CAs: the peer certificate is not signed by the CA client certificates chain to.
    const ca = m.secrets.get('main-etcd-ca')?.data ?? {};
    expect(
      cert(m.secrets.get('main-etcd-peer-tls')).verify(
        new X509Certificate(ca['peer-ca.crt'] ?? '').publicKey,
      ),
    ).toBe(true);
    expect(
      cert(m.secrets.get('main-etcd-client-tls')).verify(
        new X509Certificate(ca['peer-ca.crt'] ?? '').publicKey,
      ),
    ).toBe(false);
    expect(m.secrets.get('main-etcd-server-tls')?.data['ca.crt']).toBe(ca['client-ca.crt']);

    m.writes.length = 0;
    const again = ready(
      await ensureTls(m.store, cluster({}, { clusterID: 'abc' }), { now, domain: 'cluster.local' }),
    );
    expect(m.writes).toEqual([]);
    expect(again.notes).toEqual([]);
  });

  it('renews a generated certificate 90 days before it ends, with the same CA and no other write', async () => {
    const m = memoryStore();
    const c = cluster({});
    await ensureTls(m.store, c, { now, domain: 'cluster.local' });
    const before = cert(m.secrets.get('main-etcd-server-tls'));
    m.writes.length = 0;
    const later = new Date(Date.parse(before.validTo) - RENEW_BEFORE_MS + DAY);
    const r = ready(
      await ensureTls(m.store, cluster({}, { clusterID: 'abc' }), { now: later, domain: 'cluster.local' }),
    );
    expect(m.writes.sort()).toEqual([
      'replace main-etcd-client-tls',
      'replace main-etcd-peer-tls',
      'replace main-etcd-server-tls',
    ]);
    const after = cert(m.secrets.get('main-etcd-server-tls'));
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(after.issuer).toBe(before.issuer);
    expect(r.notes.map((n) => n.reason)).toContain('CertificateRenewed');
  });

  it('issues nothing once the cluster formed and its CA Secret is gone (TLSCASecretLost)', async () => {
    const m = memoryStore();
    await ensureTls(m.store, cluster({}), { now, domain: 'cluster.local' });
    m.secrets.delete('main-etcd-ca');
    m.writes.length = 0;
    const r = await ensureTls(m.store, cluster({}, { clusterID: 'abc' }), { now, domain: 'cluster.local' });
    expect(r).toMatchObject({ reason: 'TLSCASecretLost', retry: false });
    expect(m.writes).toEqual([]);
  });

  it('neither uses nor changes a Secret of a generated name that is not the cluster’s', async () => {
    const m = memoryStore();
    m.put('main-etcd-peer-tls', { 'tls.crt': 'x' }, false);
    const r = await ensureTls(m.store, cluster({}), { now, domain: 'cluster.local' });
    expect(r).toMatchObject({ reason: 'OwnershipConflict', retry: false });
    expect(m.writes).toEqual([]);
    expect(m.secrets.get('main-etcd-peer-tls')?.data).toEqual({ 'tls.crt': 'x' });
  });
});

describe('ensureTls: the CAs members started with', () => {
  it('refuses a generated CA replaced after it was recorded, issuing nothing from it (TLSCAChanged)', async () => {
    const m = memoryStore();
    const first = ready(await ensureTls(m.store, cluster({}), { now, domain: 'cluster.local' }));
    const formed = cluster({}, { clusterID: 'abc', tls: { trustedCAs: first.trust } });
    ready(await ensureTls(m.store, formed, { now, domain: 'cluster.local' }));
    // Someone puts other CAs into the Secret (it stays the cluster's).
    const other = await issueCa({ cn: 'other', now });
    const ca = m.secrets.get('main-etcd-ca');
    m.put('main-etcd-ca', { ...ca?.data, 'peer-ca.crt': other.cert, 'peer-ca.key': other.key }, true);
    m.writes.length = 0;
    const r = await ensureTls(m.store, formed, { now, domain: 'cluster.local' });
    expect(r).toMatchObject({ reason: 'TLSCAChanged', retry: false });
    expect((r as TlsRefusal).message).toContain('main-etcd-ca');
    expect(m.writes).toEqual([]);
  });

  it('ends no later than a CA: a certificate is never issued past its CA, and expiresAt says the CA', async () => {
    const m = memoryStore();
    ready(await ensureTls(m.store, cluster({}), { now, domain: 'cluster.local' }));
    const caEnds = Date.parse(
      new X509Certificate(m.secrets.get('main-etcd-ca')?.data['client-ca.crt'] ?? '').validTo,
    );
    // 200 days before the CAs end: renewed, for 200 days at most.
    const late = new Date(caEnds - 200 * DAY);
    const r = ready(
      await ensureTls(m.store, cluster({}, { clusterID: 'abc' }), { now: late, domain: 'cluster.local' }),
    );
    const leafEnds = Date.parse(cert(m.secrets.get('main-etcd-server-tls')).validTo);
    expect(leafEnds).toBeLessThanOrEqual(caEnds);
    expect(r.expiresAt.getTime()).toBeLessThanOrEqual(caEnds);
  });

  it('in the CAs’ last 90 days, issues once and keeps that certificate: a new one could not end later', async () => {
    const m = memoryStore();
    ready(await ensureTls(m.store, cluster({}), { now, domain: 'cluster.local' }));
    const caEnds = Date.parse(
      new X509Certificate(m.secrets.get('main-etcd-ca')?.data['client-ca.crt'] ?? '').validTo,
    );
    const formed = cluster({}, { clusterID: 'abc' });
    const at = (days: number) => ({ now: new Date(caEnds - days * DAY), domain: 'cluster.local' });
    m.writes.length = 0;
    ready(await ensureTls(m.store, formed, at(60)));
    expect(m.writes.sort()).toEqual([
      'replace main-etcd-client-tls',
      'replace main-etcd-peer-tls',
      'replace main-etcd-server-tls',
    ]);
    const issued = m.secrets.get('main-etcd-server-tls')?.data['tls.crt'];
    // The next runs, an hour and a week later: nothing issued again.
    m.writes.length = 0;
    ready(await ensureTls(m.store, formed, at(60 - 1 / 24)));
    ready(await ensureTls(m.store, formed, at(53)));
    expect(m.writes).toEqual([]);
    expect(m.secrets.get('main-etcd-server-tls')?.data['tls.crt']).toBe(issued);
    // Once the CA has ended, nothing can be issued: said, not retried.
    const over = await ensureTls(m.store, formed, at(-1));
    expect(over).toMatchObject({ reason: 'TLSCertificateExpired', retry: false });
  });
});

describe('ensureTls: given Secrets', () => {
  /** A given set, made by the user's own CA: one CA for peers, one for clients. */
  const givenSet = async (
    c: EtcdCluster,
    serverUsages: ('serverAuth' | 'clientAuth')[] = ['serverAuth', 'clientAuth'],
  ) => {
    const peerCa = await issueCa({ cn: 'my-peer-ca', now });
    const clientCa = await issueCa({ cn: 'my-client-ca', now });
    const peer = await issueLeaf({
      ca: peerCa,
      cn: 'peer',
      ...peerSans(c, 'cluster.local'),
      usages: ['serverAuth', 'clientAuth'],
      now,
    });
    const server = await issueLeaf({
      ca: clientCa,
      cn: 'server',
      ...serverSans(c, 'cluster.local'),
      usages: serverUsages,
      now,
      days: 20,
    });
    const client = await issueLeaf({ ca: clientCa, cn: 'app', usages: ['clientAuth'], now });
    return {
      peer: { 'tls.crt': peer.cert, 'tls.key': peer.key, 'ca.crt': peerCa.cert },
      server: { 'tls.crt': server.cert, 'tls.key': server.key, 'ca.crt': clientCa.cert },
      client: { 'tls.crt': client.cert, 'tls.key': client.key, 'ca.crt': clientCa.cert },
    };
  };
  const mine = { peer: { secretName: 'p' }, server: { secretName: 's' }, client: { secretName: 'k' } };
  /** A given set into the Secrets `mine` names. */
  const putSet = (m: ReturnType<typeof memoryStore>, set: Awaited<ReturnType<typeof givenSet>>) => {
    m.put('p', set.peer);
    m.put('s', set.server);
    m.put('k', set.client);
  };

  it('uses them as they are, never writing one, and warns of one that ends within 30 days', async () => {
    const m = memoryStore();
    const c = cluster(mine);
    const set = await givenSet(c);
    putSet(m, set);
    const r = ready(await ensureTls(m.store, c, { now, domain: 'cluster.local' }));
    expect(m.writes).toEqual([]);
    expect(r.client.cert).toBe(set.client['tls.crt']);
    expect(r.notes).toMatchObject([{ reason: 'CertificateExpiring', warning: true }]);
    expect(r.notes[0]?.message).toContain('Secret s');
  });

  it('refuses a given CA that changed after the members started with another one', async () => {
    const m = memoryStore();
    const c = cluster(mine);
    const set = await givenSet(c);
    putSet(m, set);
    const first = ready(await ensureTls(m.store, c, { now, domain: 'cluster.local' }));
    const renewed = await givenSet(c); // cert-manager renewing its CA with a new key
    putSet(m, renewed);
    const formed = cluster(mine, { clusterID: 'abc', tls: { trustedCAs: first.trust } });
    expect(await ensureTls(m.store, formed, { now, domain: 'cluster.local' })).toMatchObject({
      reason: 'TLSCAChanged',
    });
    // The former CAs back, then a given Secret deleted: said as such, not as a changed CA.
    m.put('s', set.server);
    m.put('k', set.client);
    m.secrets.delete('p');
    expect(await ensureTls(m.store, formed, { now, domain: 'cluster.local' })).toMatchObject({
      reason: 'TLSSecretNotFound',
      retry: true,
    });
  });

  it('refuses a given name that Tideway generates (it would write it, or mount the CA keys)', async () => {
    const m = memoryStore();
    const r = await ensureTls(m.store, cluster({ peer: { secretName: 'main-etcd-ca' } }), {
      now,
      domain: 'cluster.local',
    });
    expect(r).toMatchObject({ reason: 'TLSSecretNameReserved', retry: false });
    expect(m.writes).toEqual([]);
  });

  it('waits for a given Secret that does not exist yet (TLSSecretNotFound, looked at again)', async () => {
    const m = memoryStore();
    const r = await ensureTls(m.store, cluster(mine), { now, domain: 'cluster.local' });
    expect(r).toMatchObject({ reason: 'TLSSecretNotFound', retry: true });
    expect((r as TlsRefusal).message).toContain('Secret p');
  });

  it('refuses a server certificate without clientAuth, which etcd’s own gateway presents', async () => {
    const m = memoryStore();
    const c = cluster(mine);
    const set = await givenSet(c, ['serverAuth']);
    putSet(m, set);
    const r = await ensureTls(m.store, c, { now, domain: 'cluster.local' });
    expect(r).toMatchObject({ reason: 'TLSSecretInvalid', retry: false });
    expect(m.writes).toEqual([]);
  });

  it('generates the parts not given: a given peer Secret with generated server and client', async () => {
    const m = memoryStore();
    const c = cluster({ peer: { secretName: 'p' } });
    m.put('p', (await givenSet(c)).peer);
    ready(await ensureTls(m.store, c, { now, domain: 'cluster.local' }));
    expect(m.writes.sort()).toEqual([
      'create main-etcd-ca',
      'create main-etcd-client-tls',
      'create main-etcd-server-tls',
    ]);
  });
});
