import { createHash, X509Certificate } from 'node:crypto';
import type { EtcdCluster } from '../../api/generated.ts';
import type { EtcdTls } from '../../etcd/http.ts';
import { type CheckedPart, checkPart, checkSet, isProblem, type TlsFiles } from './check.ts';
import { issueCa, issueLeaf, type KeyPair, type Usage } from './issue.ts';
import {
  defaultSecretName,
  peerSans,
  requiredHosts,
  serverNameOf,
  serverSans,
  type TlsPart,
  tlsSecretNames,
} from './sans.ts';
import type { SecretStore, StoredSecret } from './store.ts';

type Cluster = Pick<EtcdCluster, 'metadata' | 'spec' | 'status'>;

const DAY_MS = 86_400_000;
/** A generated certificate is issued again this long before it ends. */
export const RENEW_BEFORE_MS = 90 * DAY_MS;
/** A given certificate ending this soon is warned about on every run. */
const WARN_BEFORE_MS = 30 * DAY_MS;
const PARTS: readonly TlsPart[] = ['peer', 'server', 'client'];
const LEAF_DAYS = 365;

/** SHA-256 of a CA file as members read it (surrounding whitespace aside). */
const fingerprintOf = (pem: string) => createHash('sha256').update(pem.trim()).digest('hex');

export type TlsNote = { reason: string; message: string; warning?: boolean };
export type TlsReady = {
  /** What Tideway's functions present to members, and verify them by. */
  client: EtcdTls;
  /** The earliest end of the three certificates in use. */
  expiresAt: Date;
  /** Fingerprints of the CAs members load at start: recorded once (status.tls.trustedCAs). */
  trust: { peer: string; client: string };
  /** What this run did or saw, for Events. */
  notes: TlsNote[];
};
export type TlsRefusal = {
  reason: string;
  message: string;
  /** Worth looking again soon (a Secret that may be created any moment). */
  retry: boolean;
};

/** Which CA signs each generated part, and what the part's ca.crt holds. */
const CA_OF: Record<TlsPart, 'peer' | 'client'> = { peer: 'peer', server: 'client', client: 'client' };
const USAGES: Record<TlsPart, readonly Usage[]> = {
  peer: ['serverAuth', 'clientAuth'],
  // etcd's own gateway dials the client port with the server certificate.
  server: ['serverAuth', 'clientAuth'],
  client: ['clientAuth'],
};

const caPairs = (d: Record<string, string>): Record<'peer' | 'client', KeyPair> | undefined => {
  const pair = (p: string) => {
    const cert = d[`${p}-ca.crt`];
    const key = d[`${p}-ca.key`];
    return cert && key ? { cert, key } : undefined;
  };
  const peer = pair('peer');
  const client = pair('client');
  return peer && client ? { peer, client } : undefined;
};

/**
 * Makes sure the cluster's TLS material is there and usable: generates the CAs once (before the
 * cluster formed, never after: members trust only the CAs they started with), issues and renews
 * the generated certificates, checks given Secrets without ever writing them. Level-triggered:
 * run again, it changes nothing. A refusal says what is wrong and how to fix it.
 */
export const ensureTls = async (
  store: SecretStore,
  c: Cluster,
  o: { now: Date; domain: string },
): Promise<TlsReady | TlsRefusal> => {
  const names = tlsSecretNames(c);
  const given = (part: TlsPart) => !!c.spec.tls?.[part];
  const generated = PARTS.filter((p) => !given(p));
  const notes: TlsNote[] = [];
  const foreign = (name: string) => ({
    reason: 'OwnershipConflict',
    message: `Secret ${name} exists and is not this cluster's; Tideway neither uses nor changes it. Delete it, or name your own Secrets in spec.tls`,
    retry: false,
  });

  // A given name that is one Tideway generates would be written by it, or mount the CA keys.
  const reserved = [names.ca, ...PARTS.map((p) => defaultSecretName(c, p))];
  for (const p of PARTS.filter(given))
    if (reserved.includes(names[p]))
      return {
        reason: 'TLSSecretNameReserved',
        message: `spec.tls.${p}.secretName ${names[p]} is a name Tideway generates for this cluster (${reserved.join(', ')}); name your Secret otherwise`,
        retry: false,
      };

  const secrets = new Map<TlsPart, StoredSecret | undefined>(
    await Promise.all(PARTS.map(async (p) => [p, await store.get(names[p])] as const)),
  );
  for (const p of generated) {
    const s = secrets.get(p);
    if (s && !s.ours) return foreign(names[p]);
  }

  let cas: Record<'peer' | 'client', KeyPair> | undefined;
  if (generated.length > 0) {
    const stored = await store.get(names.ca);
    if (stored && !stored.ours) return foreign(names.ca);
    cas = stored ? caPairs(stored.data) : undefined;
    if (stored && !cas)
      return {
        reason: 'TLSCASecretLost',
        message: `Secret ${names.ca} lacks a CA certificate or key; members trust only the CAs they started with, so Tideway issues nothing new. Restore the Secret from a copy that keeps its ownerReferences (one this cluster does not control is refused), or make a new cluster from a Backup`,
        retry: false,
      };
    if (!stored) {
      // CAs are made once, before any member exists: a CA made later would cut the members apart.
      if (c.status?.clusterID || c.status?.tls?.trustedCAs || generated.some((p) => secrets.get(p)))
        return {
          reason: 'TLSCASecretLost',
          message: `Secret ${names.ca} is gone; members trust only the CAs they started with, so Tideway issues nothing new. Restore the Secret from a copy that keeps its ownerReferences (one this cluster does not control is refused), or make a new cluster from a Backup`,
          retry: false,
        };
      const name = nameOf(c);
      const made = {
        peer: await issueCa({ cn: `${name}-etcd-peer-ca`, now: o.now }),
        client: await issueCa({ cn: `${name}-etcd-client-ca`, now: o.now }),
      };
      const data = {
        'peer-ca.crt': made.peer.cert,
        'peer-ca.key': made.peer.key,
        'client-ca.crt': made.client.cert,
        'client-ca.key': made.client.key,
      };
      if (await store.create(names.ca, 'Opaque', data)) {
        cas = made;
        notes.push({
          reason: 'CertificatesIssued',
          message: `made the peer and client CAs in Secret ${names.ca}`,
        });
      } else {
        // Another run made them first: use those.
        const theirs = await store.get(names.ca);
        if (!theirs?.ours) return foreign(names.ca);
        cas = caPairs(theirs.data);
        if (!cas)
          return { reason: 'TLSCASecretLost', message: `Secret ${names.ca} is incomplete`, retry: true };
      }
    }
  }

  // What members load at start and never again: the peer part's ca.crt (whom peers trust) and
  // the server part's (whom clients trust). Once recorded, a change cuts the members apart.
  const partOf = (k: 'peer' | 'client') => (k === 'peer' ? 'peer' : 'server');
  const caFile = (k: 'peer' | 'client') =>
    given(partOf(k)) ? secrets.get(partOf(k))?.data['ca.crt'] : cas?.[k].cert;
  const trust = { peer: fingerprintOf(caFile('peer') ?? ''), client: fingerprintOf(caFile('client') ?? '') };
  const pinned = c.status?.tls?.trustedCAs;
  // A given Secret that is not there is the checks' below to report (TLSSecretNotFound), not a changed CA.
  const changed = pinned
    ? (['peer', 'client'] as const).find(
        (k) => pinned[k] && caFile(k) !== undefined && trust[k] !== pinned[k],
      )
    : undefined;
  if (changed) {
    const part = partOf(changed);
    const where = given(part) ? names[part] : names.ca;
    return {
      reason: 'TLSCAChanged',
      message: `the ${changed} CA in Secret ${where} is not the one the members started with (sha256 ${pinned?.[changed]?.slice(0, 16)}…): etcd loads CAs only at start, so members would refuse certificates of the new one. Put the former CA back; changing a cluster's CA is not supported yet`,
      retry: false,
    };
  }
  const checked = new Map<TlsPart, CheckedPart>();
  let clientFiles: Record<string, string> = {};
  for (const part of PARTS) {
    const name = names[part];
    const s = secrets.get(part);
    const files = (s?.data ?? {}) as TlsFiles;
    const hosts = requiredHosts(c, part);
    if (given(part)) {
      if (!s)
        return {
          reason: 'TLSSecretNotFound',
          message: `Secret ${name} (spec.tls.${part}.secretName) does not exist yet; create it with tls.crt, tls.key and ca.crt`,
          retry: true,
        };
      const r = checkPart({ part, secret: name, files, hosts, now: o.now });
      if (isProblem(r)) return { ...r, retry: false };
      if (r.notAfter.getTime() - o.now.getTime() < WARN_BEFORE_MS)
        notes.push({
          reason: 'CertificateExpiring',
          message: `the certificate in Secret ${name} ends ${r.notAfter.toISOString()}; renew it there (members pick it up without a restart)`,
          warning: true,
        });
      checked.set(part, r);
      if (part === 'client') clientFiles = s.data;
      continue;
    }
    const ca = cas?.[CA_OF[part]];
    if (!ca) throw new Error(`no CA for ${part}`); // generated parts always have one by here
    const current = s
      ? checkPart({ part, secret: name, files: { ...files, 'ca.crt': ca.cert }, hosts, now: o.now })
      : undefined;
    const caEnds = new X509Certificate(ca.cert).validToDate.getTime();
    const days = Math.min(LEAF_DAYS, Math.floor((caEnds - o.now.getTime()) / DAY_MS));
    // In its CA's last 90 days a new certificate could end no later than the current one: it is
    // kept, or every run would issue another.
    const fresh =
      current &&
      !isProblem(current) &&
      files['ca.crt'] === ca.cert &&
      (current.notAfter.getTime() - o.now.getTime() >= RENEW_BEFORE_MS ||
        current.notAfter.getTime() >= o.now.getTime() + (days - 1) * DAY_MS);
    if (current && fresh) {
      checked.set(part, current);
      if (part === 'client') clientFiles = files as Record<string, string>;
      continue;
    }
    const sans =
      part === 'peer'
        ? peerSans(c, o.domain)
        : part === 'server'
          ? serverSans(c, o.domain)
          : { dns: [], ips: [] };
    if (days < 1)
      return {
        reason: 'TLSCertificateExpired',
        message: `the generated ${CA_OF[part]} CA in Secret ${names.ca} ends ${new Date(caEnds).toISOString()}: no certificate can be issued from it; make a new cluster from a Backup`,
        retry: false,
      };
    const leaf = await issueLeaf({
      days,
      ca,
      cn: part === 'client' ? 'tideway' : `${nameOf(c)}-etcd-${part}`,
      ...sans,
      usages: USAGES[part],
      now: o.now,
    });
    const data = { 'tls.crt': leaf.cert, 'tls.key': leaf.key, 'ca.crt': ca.cert };
    if (s) {
      await store.replace(name, s.resourceVersion, 'kubernetes.io/tls', data);
      notes.push({
        reason: 'CertificateRenewed',
        message: `issued a new ${part} certificate in Secret ${name} (${isProblem(current) ? current.message : 'the old one ends within 90 days'})`,
      });
    } else if (!(await store.create(name, 'kubernetes.io/tls', data))) {
      // Made by another run meanwhile: the next run checks that one.
      return {
        reason: 'TLSSecretChanged',
        message: `Secret ${name} was made meanwhile; looking again`,
        retry: true,
      };
    }
    const r = checkPart({ part, secret: name, files: data, hosts, now: o.now });
    if (isProblem(r)) throw new Error(`a certificate just issued fails its own check: ${r.message}`);
    checked.set(part, r);
    if (part === 'client') clientFiles = data;
  }

  const part = (p: TlsPart) => {
    const r = checked.get(p);
    if (!r) throw new Error(`${p} not checked`);
    return r;
  };
  const [peer, server, client] = [part('peer'), part('server'), part('client')];
  const mismatch = checkSet({
    peer,
    server,
    client,
    secrets: { server: names.server, client: names.client },
  });
  if (mismatch) return { ...mismatch, retry: false };
  // The CAs end too: a leaf outlives nothing it chains to.
  const ends = [peer, server, client].flatMap((x) => [x.notAfter, ...x.ca.map((a) => a.validToDate)]);
  const expiresAt = new Date(Math.min(...ends.map((d) => d.getTime())));
  return { client: clientTlsOf(c, clientFiles), expiresAt, trust, notes };
};

/** The client material of a cluster, as read from its client Secret. */
export const clientTlsOf = (
  c: Pick<EtcdCluster, 'metadata' | 'spec'>,
  d: Record<string, string>,
): EtcdTls => ({
  ca: d['ca.crt'],
  cert: d['tls.crt'],
  key: d['tls.key'],
  serverName: serverNameOf(c),
});

const nameOf = (c: Pick<EtcdCluster, 'metadata'>) => c.metadata.name ?? '';
