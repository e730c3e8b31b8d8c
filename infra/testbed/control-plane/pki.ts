import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '../exec/run.ts';

export type Pki = {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  /** Service-account token signing pair. */
  readonly saKey: string;
  readonly saPub: string;
};

export type PkiOptions = {
  dir: string;
  /** IP SANs of the API server's serving certificate. */
  ips: readonly string[];
};

const DNS_NAMES = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];

/**
 * envtest-style PKI: a throwaway CA, a serving certificate for the API server, an admin client
 * certificate in group system:masters, and the service-account key pair. EC keys keep it fast.
 */
export const createPki = async ({ dir, ips }: PkiOptions): Promise<Pki> => {
  const f = (name: string) => join(dir, name);
  const pki: Pki = {
    dir,
    caCert: f('ca.crt'),
    caKey: f('ca.key'),
    servingCert: f('apiserver.crt'),
    servingKey: f('apiserver.key'),
    adminCert: f('admin.crt'),
    adminKey: f('admin.key'),
    saKey: f('sa.key'),
    saPub: f('sa.pub'),
  };
  const days = ['-days', '30'];
  const ecKey = (out: string) =>
    run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', out]);

  await ecKey(pki.caKey);
  await run('openssl', [
    'req',
    '-x509',
    '-new',
    '-key',
    pki.caKey,
    '-subj',
    '/CN=tideway-testbed-ca',
    ...days,
    '-out',
    pki.caCert,
  ]);

  const sign = async (key: string, cert: string, subject: string, ext: string) => {
    const csr = `${cert}.csr`;
    const extFile = `${cert}.ext`;
    await ecKey(key);
    await run('openssl', ['req', '-new', '-key', key, '-subj', subject, '-out', csr]);
    await writeFile(extFile, ext);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      pki.caCert,
      '-CAkey',
      pki.caKey,
      '-CAcreateserial',
      ...days,
      '-extfile',
      extFile,
      '-out',
      cert,
    ]);
  };

  const san = [...DNS_NAMES.map((d) => `DNS:${d}`), ...ips.map((ip) => `IP:${ip}`)].join(',');
  await sign(
    pki.servingKey,
    pki.servingCert,
    '/CN=kube-apiserver',
    `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`,
  );
  await sign(
    pki.adminKey,
    pki.adminCert,
    '/O=system:masters/CN=tideway-admin',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  // RSA: the service-account issuer signs with RS256 by default.
  await run('openssl', [
    'genpkey',
    '-algorithm',
    'RSA',
    '-pkeyopt',
    'rsa_keygen_bits:2048',
    '-out',
    pki.saKey,
  ]);
  await run('openssl', ['pkey', '-in', pki.saKey, '-pubout', '-out', pki.saPub]);
  return pki;
};
