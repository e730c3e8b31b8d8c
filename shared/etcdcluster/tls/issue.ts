import { createPrivateKey, KeyObject, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { isIPv4 } from 'node:net';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/** PEM certificate and PKCS#8 PEM key. */
export type KeyPair = { cert: string; key: string };
export type Usage = 'serverAuth' | 'clientAuth';

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const OID = {
  cn: '2.5.4.3',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  ski: '2.5.29.14',
  aki: '2.5.29.35',
  eku: '2.5.29.37',
  san: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;
const DAY_MS = 86_400_000;
/** notBefore this far back: a node whose clock lags a little still accepts a fresh certificate. */
const SKEW_MS = 5 * 60_000;

const pem = (label: string, der: ArrayBuffer) => {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
};

const nameOf = (cn: string) =>
  new pkijs.RelativeDistinguishedNames({
    typesAndValues: [
      new pkijs.AttributeTypeAndValue({ type: OID.cn, value: new asn1js.Utf8String({ value: cn }) }),
    ],
  });

const ext = (extnID: string, critical: boolean, value: asn1js.BaseBlock) =>
  new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });

/** RFC 5280: UTCTime through 2049, GeneralizedTime after; whole seconds (no fractions allowed). */
const timeOf = (ms: number) => {
  const value = new Date(Math.floor(ms / 1000) * 1000);
  return new pkijs.Time({ type: value.getUTCFullYear() < 2050 ? 0 : 1, value });
};

/** 16 random bytes with the top bits 01: positive and minimally encoded (Go rejects a DER INTEGER with a redundant 0x00). */
const serial = () => {
  const b = randomBytes(16);
  b[0] = ((b[0] ?? 0) & 0x3f) | 0x40;
  return new asn1js.Integer({ valueHex: b });
};

const keyIdOf = (spki: pkijs.PublicKeyInfo) =>
  webcrypto.subtle.digest('SHA-1', spki.subjectPublicKey.valueBlock.valueHexView);

/** keyUsage bits: digitalSignature 0x80, keyCertSign 0x04, cRLSign 0x02; DER drops trailing zero bits. */
const keyUsage = (ca: boolean) =>
  new asn1js.BitString({ valueHex: new Uint8Array([ca ? 0x86 : 0x80]).buffer, unusedBits: ca ? 1 : 7 });

const ipOf = (ip: string) => {
  if (!isIPv4(ip)) throw new Error(`not an IPv4 address: ${ip}`);
  return new asn1js.OctetString({ valueHex: new Uint8Array(ip.split('.').map(Number)).buffer });
};

type Signer = { subject: pkijs.RelativeDistinguishedNames; keyId: ArrayBuffer; key: webcrypto.CryptoKey };

const issue = async (o: {
  cn: string;
  now: Date;
  days: number;
  signer?: Signer;
  extensions: (keyId: ArrayBuffer) => pkijs.Extension[];
}): Promise<KeyPair> => {
  const keys = await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']);
  const c = new pkijs.Certificate();
  c.version = 2; // v3
  c.serialNumber = serial();
  c.subject = nameOf(o.cn);
  c.issuer = o.signer?.subject ?? nameOf(o.cn);
  c.notBefore = timeOf(o.now.getTime() - SKEW_MS);
  c.notAfter = timeOf(o.now.getTime() + o.days * DAY_MS);
  await c.subjectPublicKeyInfo.importKey(keys.publicKey);
  c.extensions = o.extensions(await keyIdOf(c.subjectPublicKeyInfo));
  await c.sign(o.signer?.key ?? keys.privateKey, 'SHA-256'); // ecdsa-with-SHA256
  return {
    cert: pem('CERTIFICATE', c.toSchema(true).toBER(false)),
    key: KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
};

export const issueCa = (o: { cn: string; now: Date; days?: number }): Promise<KeyPair> =>
  issue({
    cn: o.cn,
    now: o.now,
    days: o.days ?? 3650,
    extensions: (keyId) => [
      // pathLen 0: it signs leaves only.
      ext(
        OID.basicConstraints,
        true,
        new pkijs.BasicConstraints({ cA: true, pathLenConstraint: 0 }).toSchema(),
      ),
      ext(OID.keyUsage, true, keyUsage(true)),
      ext(OID.ski, false, new asn1js.OctetString({ valueHex: keyId })),
    ],
  });

/** The CA as a signer: its subject becomes the issuer name, its key identifier the AKI. */
const signerOf = async (ca: KeyPair): Promise<Signer> => {
  const x = new X509Certificate(ca.cert);
  const privateKey = createPrivateKey(ca.key);
  if (!x.checkPrivateKey(privateKey))
    throw new Error(`the CA key does not belong to the CA certificate ${x.subject}`);
  const cert = pkijs.Certificate.fromBER(x.raw);
  const ski = cert.extensions?.find((e) => e.extnID === OID.ski)?.parsedValue;
  const keyId =
    ski instanceof asn1js.OctetString
      ? ski.valueBlock.valueHexView.slice().buffer
      : await keyIdOf(cert.subjectPublicKeyInfo);
  const der = privateKey.export({ type: 'pkcs8', format: 'der' });
  const key = await webcrypto.subtle.importKey('pkcs8', der, EC, false, ['sign']);
  return { subject: cert.subject, keyId, key };
};

export const issueLeaf = async (o: {
  ca: KeyPair;
  cn: string;
  dns?: readonly string[];
  ips?: readonly string[];
  usages: readonly Usage[];
  now: Date;
  days?: number;
}): Promise<KeyPair> => {
  const signer = await signerOf(o.ca);
  const dns = o.dns ?? [];
  const ips = o.ips ?? [];
  const altNames = [
    ...dns.map((value) => new pkijs.GeneralName({ type: 2, value })), // dNSName
    ...ips.map((ip) => new pkijs.GeneralName({ type: 7, value: ipOf(ip) })), // iPAddress
  ];
  return issue({
    cn: o.cn,
    now: o.now,
    days: o.days ?? 365,
    signer,
    extensions: (keyId) => [
      ext(OID.basicConstraints, true, new pkijs.BasicConstraints({}).toSchema()),
      ext(OID.keyUsage, true, keyUsage(false)),
      ext(OID.ski, false, new asn1js.OctetString({ valueHex: keyId })),
      ext(
        OID.aki,
        false,
        new pkijs.AuthorityKeyIdentifier({
          keyIdentifier: new asn1js.OctetString({ valueHex: signer.keyId }),
        }).toSchema(),
      ),
      ...(o.usages.length
        ? [
            ext(
              OID.eku,
              false,
              new pkijs.ExtKeyUsage({ keyPurposes: o.usages.map((u) => OID[u]) }).toSchema(),
            ),
          ]
        : []),
      ...(altNames.length ? [ext(OID.san, false, new pkijs.AltName({ altNames }).toSchema())] : []),
    ],
  });
};
