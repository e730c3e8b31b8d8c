import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import type { TlsPart } from './sans.ts';

export type TlsFiles = { 'tls.crt'?: string; 'tls.key'?: string; 'ca.crt'?: string };
export type TlsProblem = { reason: 'TLSSecretInvalid' | 'TLSCertificateExpired'; message: string };
/** A part that passed: its leaf, the intermediates after it in tls.crt, and the certificates of ca.crt. */
export type CheckedPart = {
  notAfter: Date;
  leaf: X509Certificate;
  intermediates: X509Certificate[];
  ca: X509Certificate[];
};

const REASONS: readonly string[] = [
  'TLSSecretInvalid',
  'TLSCertificateExpired',
] satisfies TlsProblem['reason'][];
const EKU = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2', any: '2.5.29.37.0' } as const;
const FILES = ['tls.crt', 'tls.key', 'ca.crt'] as const;

const invalid = (message: string): TlsProblem => ({ reason: 'TLSSecretInvalid', message });
const NOT_BEFORE_SKEW_MS = 5 * 60_000;

export const isProblem = (x: unknown): x is TlsProblem =>
  typeof x === 'object' && x !== null && REASONS.includes((x as { reason?: unknown }).reason as string);

/** Every CERTIFICATE block of a PEM file, in order; undefined when one does not parse. */
const certificatesOf = (text: string): X509Certificate[] | undefined => {
  try {
    return (text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
      (block) => new X509Certificate(block),
    );
  } catch {
    return undefined;
  }
};

const keyOf = (text: string): KeyObject | undefined => {
  try {
    return createPrivateKey(text);
  } catch {
    return undefined;
  }
};

/**
 * The certificates from `leaf` up to one signed by an anchor (the anchor last), or undefined.
 * Intermediates must be CAs, as Go's verifier (etcd) demands.
 */
export const chainOf = (
  leaf: X509Certificate,
  intermediates: readonly X509Certificate[],
  anchors: readonly X509Certificate[],
): X509Certificate[] | undefined => {
  const signs = (issuer: X509Certificate, x: X509Certificate) =>
    x.checkIssued(issuer) && x.verify(issuer.publicKey);
  const path = [leaf];
  // Each intermediate is used once at most, so this ends.
  for (;;) {
    const x = path[path.length - 1] ?? leaf;
    const anchor = anchors.find((a) => signs(a, x));
    if (anchor) return [...path, anchor];
    const next = intermediates.find((i) => i.ca && !path.includes(i) && signs(i, x));
    if (!next) return undefined;
    path.push(next);
  }
};

/** An absent EKU allows every use (as in Go's verifier); anyExtendedKeyUsage does too. */
const allows = (leaf: X509Certificate, usage: keyof typeof EKU) =>
  !leaf.keyUsage || leaf.keyUsage.includes(EKU.any) || leaf.keyUsage.includes(EKU[usage]);

const ekuProblem = (part: TlsPart, secret: string, leaf: X509Certificate): TlsProblem | undefined => {
  const missing = (['serverAuth', 'clientAuth'] as const).filter(
    (u) => (part !== 'client' || u === 'clientAuth') && !allows(leaf, u),
  );
  if (!missing.length) return undefined;
  const why = {
    peer: 'members dial each other with it and accept each other with it',
    server:
      'members serve clients with it, and etcd’s gateway dials the member’s own gRPC port with it as its client certificate',
    client: 'Tideway presents it to members as its client certificate',
  }[part];
  return invalid(
    `The certificate in Secret ${secret} (tls.crt) lacks extended key usage ${missing.join(' and ')}, which ${part} certificates need because ${why}: reissue it with ${missing.join(' and ')} (or without an extended key usage).`,
  );
};

/** Go ignores the subject CN for host names and allows no partial wildcards: check the same way. */
const HOST_OPTIONS = { subject: 'never', partialWildcards: false } as const;

/** `x.<peers>` stands for any member: what covers it is a wildcard. */
const coverOf = (host: string) =>
  host.startsWith('x.')
    ? { what: `every member's name <member>.${host.slice(2)}`, san: `*.${host.slice(2)}` }
    : { what: host, san: host };

export const checkPart = (o: {
  part: TlsPart;
  secret: string;
  files: TlsFiles;
  hosts: readonly string[];
  now: Date;
}): CheckedPart | TlsProblem => {
  const { part, secret, files } = o;
  for (const file of FILES) {
    if (!files[file]?.trim()) {
      return invalid(
        `Secret ${secret} has no ${file}: add it (a ${part} Secret holds tls.crt, tls.key and ca.crt).`,
      );
    }
  }
  const chain = certificatesOf(files['tls.crt'] ?? '');
  const [leaf, ...intermediates] = chain ?? [];
  if (!leaf) {
    return invalid(
      `tls.crt in Secret ${secret} holds no readable PEM certificate: put the ${part} certificate there (leaf first, then any intermediates).`,
    );
  }
  // etcd reads every block of a CA file as a certificate and will not start on another kind.
  const foreign = (files['ca.crt'] ?? '').match(/-----BEGIN (?!CERTIFICATE-----)[A-Z0-9 ]+-----/)?.[0];
  if (foreign) {
    return invalid(
      `ca.crt in Secret ${secret} holds a ${foreign.slice(11, -5).toLowerCase()} block besides certificates: etcd reads every block there as a certificate and would not start; keep only CA certificates in ca.crt.`,
    );
  }
  const ca = certificatesOf(files['ca.crt'] ?? '') ?? [];
  if (!ca.length) {
    return invalid(
      `ca.crt in Secret ${secret} holds no readable PEM certificate: put the issuing CA certificate there.`,
    );
  }
  const key = keyOf(files['tls.key'] ?? '');
  if (!key) {
    return invalid(
      `tls.key in Secret ${secret} is not a readable PEM private key: put the unencrypted PKCS#8 or SEC1 key there.`,
    );
  }
  if (!leaf.checkPrivateKey(key)) {
    return invalid(
      `tls.key in Secret ${secret} does not belong to the certificate in tls.crt: put the key the certificate was issued for.`,
    );
  }
  if (o.now > leaf.validToDate) {
    return {
      reason: 'TLSCertificateExpired',
      message: `The certificate in Secret ${secret} (tls.crt) expired on ${leaf.validToDate.toISOString()}: renew it in Secret ${secret}.`,
    };
  }
  // Valid from a little ahead of the clock (skew between issuer and here), not days ahead.
  if (o.now.getTime() + NOT_BEFORE_SKEW_MS < leaf.validFromDate.getTime()) {
    return invalid(
      `The certificate in Secret ${secret} (tls.crt) is not valid before ${leaf.validFromDate.toISOString()}: etcd refuses it until then; issue one valid from now.`,
    );
  }
  const weak = [leaf, ...intermediates].find((x) => /sha1|md5/i.test(x.signatureAlgorithm ?? ''));
  if (weak) {
    return invalid(
      `A certificate in Secret ${secret} (tls.crt) is signed with ${weak.signatureAlgorithm}, which etcd refuses as insecure: reissue it with SHA-256 or stronger.`,
    );
  }
  const path = chainOf(leaf, intermediates, ca);
  if (!path) {
    return invalid(
      `The certificate in Secret ${secret} (tls.crt) is not signed by a CA in its ca.crt: put the issuing CA into ca.crt, and any intermediates after the leaf in tls.crt.`,
    );
  }
  const expired = path.slice(1).find((x) => o.now > x.validToDate);
  if (expired) {
    return {
      reason: 'TLSCertificateExpired',
      message: `The CA certificate ${expired.subject.replaceAll('\n', ', ')} that signs Secret ${secret}'s tls.crt expired on ${expired.validToDate.toISOString()}: renew it in Secret ${secret}.`,
    };
  }
  const host = o.hosts.find((h) => !leaf.checkHost(h, HOST_OPTIONS));
  if (host) {
    const { what, san } = coverOf(host);
    return invalid(
      `The certificate in Secret ${secret} (tls.crt) does not cover ${what}: reissue it with the DNS name ${san} among its subject alternative names.`,
    );
  }
  return ekuProblem(part, secret, leaf) ?? { notAfter: leaf.validToDate, leaf, intermediates, ca };
};

/** What the two sides of the client port each trust must have signed the other side's certificate. */
export const checkSet = (o: {
  peer: CheckedPart;
  server: CheckedPart;
  client: CheckedPart;
  secrets: { server: string; client: string };
}): TlsProblem | undefined => {
  const { server, client, secrets } = o;
  if (!chainOf(client.leaf, client.intermediates, server.ca)) {
    return invalid(
      `The client certificate in Secret ${secrets.client} is not signed by a CA in ca.crt of Secret ${secrets.server}, which members trust for clients (--trusted-ca-file): issue it from that CA, or add its CA to ${secrets.server}'s ca.crt.`,
    );
  }
  if (!chainOf(server.leaf, server.intermediates, client.ca)) {
    return invalid(
      `The server certificate in Secret ${secrets.server} is not signed by a CA in ca.crt of Secret ${secrets.client}, which Tideway verifies members with: issue it from that CA, or add its CA to ${secrets.client}'s ca.crt.`,
    );
  }
  return undefined;
};
