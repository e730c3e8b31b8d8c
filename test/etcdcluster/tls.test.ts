import { createHash, X509Certificate } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureImage } from '../../scripts/image/build.ts';
import { createEtcdClient } from '../../shared/etcd/gateway-client.ts';
import { endpointOf } from '../../shared/etcdcluster/names.ts';
import { issueCa, issueLeaf } from '../../shared/etcdcluster/tls/issue.ts';
import { findCondition } from '../../shared/kube/conditions.ts';
import { controlledBy } from '../../shared/kube/ownership.ts';
import { backups, bedStoreSpec } from '../backup/support/backups.ts';
import { bed, until } from '../support/bed.ts';
import { EVENTS_RECORDED, eventReasons } from '../support/redis.ts';
import { createSecret, etcdctlJob, etcdFunctionsFor } from './support.ts';

/**
 * Issue 15, item 2: an EtcdCluster with `tls: {}` — peers and clients over TLS with client
 * certificates required, from Secrets etcd-reconcile generates — forms and serves; clients without
 * a certificate are turned away; Tideway's own backup reaches it; a given Secret that does not fit
 * stops the cluster before any pod, with a reason.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('etcd TLS', () => {
  const b = bed();
  const { ns, etcd } = etcdFunctionsFor(
    b,
    'etcd-tls',
    [{ fn: 'backup', env: { TIDEWAY_BACKUP_ATTEMPTS: '3' } }],
    // The restore step of a cluster made from a backup runs Tideway's image.
    async () => ({
      TIDEWAY_IMAGE: (await ensureImage({ root: ROOT, log: (m) => process.stderr.write(`[image] ${m}\n`) }))
        .image,
    }),
  );
  const bk = backups(b, ns);
  const secret = (name: string) => b.core.readNamespacedSecret({ namespace: ns(), name });

  beforeAll(async () => {
    await createSecret(b, ns(), 's3-creds', {
      AWS_ACCESS_KEY_ID: b.info.s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: b.info.s3.secretAccessKey,
    });
    await etcd.apply('main', { size: 3, tls: {}, backup: { store: bedStoreSpec(b, `e2e/${ns()}`) } });
  });

  it('forms over TLS from generated Secrets the cluster owns, and serves clients with a certificate', async () => {
    const ready = await etcd.ready('main', 3);
    const uid = ready.metadata.uid ?? '';
    for (const name of ['main-etcd-ca', 'main-etcd-peer-tls', 'main-etcd-server-tls', 'main-etcd-client-tls'])
      expect(controlledBy(await secret(name), uid), name).toBe(true);
    const server = new X509Certificate(
      Buffer.from((await secret('main-etcd-server-tls')).data?.['tls.crt'] ?? '', 'base64'),
    );
    expect(ready.status?.tls?.expiresAt).toBe(new Date(server.validTo).toISOString());
    // The CAs the members loaded are on record: a changed one is refused later (TLSCAChanged).
    const cas = (await secret('main-etcd-ca')).data ?? {};
    const sha = (b64: string | undefined) =>
      createHash('sha256')
        .update(
          Buffer.from(b64 ?? '', 'base64')
            .toString()
            .trim(),
        )
        .digest('hex');
    expect(ready.status?.tls?.trustedCAs).toEqual({
      peer: sha(cas['peer-ca.crt']),
      client: sha(cas['client-ca.crt']),
    });
    const pod = (await etcd.pods('main'))[0];
    expect(pod?.spec?.containers[0]?.args).toContain('--client-cert-auth=true');
    expect(pod?.spec?.containers[0]?.args).toContain('--listen-peer-urls=https://0.0.0.0:2380');

    // From the host, as Tideway's functions: by pod IP, verifying the server name.
    const c = await etcd.client('main');
    try {
      await c.put('k/hello', 'over tls');
      expect((await c.get('k/hello'))?.value.toString()).toBe('over tls');
    } finally {
      c.close();
    }
    // The CA alone is not enough: a client certificate is required.
    const ip = pod?.status?.podIP ?? '';
    const ca = Buffer.from((await secret('main-etcd-client-tls')).data?.['ca.crt'] ?? '', 'base64');
    const anonymous = createEtcdClient({
      endpoints: [endpointOf(ready, ip)],
      tls: { ca, serverName: `main-etcd.${ns()}.svc` },
    });
    try {
      await expect(anonymous.get('k/hello', { timeoutMs: 3000 })).rejects.toThrow();
    } finally {
      anonymous.close();
    }
  });

  it('answers etcdctl in a pod at the Service name with the client Secret, and refuses it without', async () => {
    const url = `https://main-etcd.${ns()}.svc:2379`;
    const tlsArgs = ['--cacert=/tls/ca.crt', '--cert=/tls/tls.crt', '--key=/tls/tls.key'];
    const put = await etcdctlJob(
      b,
      ns(),
      'put-tls',
      [`--endpoints=${url}`, ...tlsArgs, 'put', 'k/from-pod', 'yes'],
      'main-etcd-client-tls',
    );
    expect(put.ok, put.log).toBe(true);
    const bare = await etcdctlJob(
      b,
      ns(),
      'get-no-cert',
      [
        `--endpoints=${url}`,
        '--cacert=/tls/ca.crt',
        '--dial-timeout=3s',
        '--command-timeout=5s',
        'get',
        'k/from-pod',
      ],
      'main-etcd-client-tls',
    );
    expect(bare.ok, bare.log).toBe(false);
    expect(bare.log).toMatch(/certificate|tls|deadline|context/i);
  });

  it('backs up through the client certificate, and a new TLS cluster starts from that backup', async () => {
    await bk.create('tls-1', { cluster: { name: 'main', kind: 'EtcdCluster' } });
    const done = await bk.phase('tls-1', 'Completed', 180_000);
    expect(done.status?.etcdVersion).toMatch(/^3\.6\./);
    // etcdutl writes the https peer URL into the restored member; it starts and serves over TLS.
    await etcd.apply('copy', { size: 1, tls: {}, bootstrap: { fromBackup: { name: 'tls-1' } } });
    await etcd.ready('copy', 1, 300_000);
    const c = await etcd.client('copy');
    try {
      expect((await c.get('k/hello'))?.value.toString()).toBe('over tls');
    } finally {
      c.close();
    }
  });

  it('refuses at admission turning TLS off, renaming its Secrets, and a server part without a client part', async () => {
    const store = { store: bedStoreSpec(b, `e2e/${ns()}`) };
    await expect(etcd.apply('main', { size: 3, backup: store })).rejects.toMatchObject({
      stderr: expect.stringContaining('tls cannot be turned on or off on a running cluster'),
    });
    await expect(
      etcd.apply('main', { size: 3, tls: { peer: { secretName: 'mine' } }, backup: store }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('tls Secret names cannot change after creation'),
    });
    await expect(etcd.apply('half', { size: 1, tls: { server: { secretName: 's' } } })).rejects.toMatchObject(
      {
        stderr: expect.stringContaining('tls.server and tls.client are given together'),
      },
    );
    expect((await etcd.get('main')).spec.tls).toEqual({});
  });

  it('stops before any pod on a given Secret that is missing, then on one that does not fit', async () => {
    await etcd.apply('given', { size: 1, tls: { peer: { secretName: 'my-peer' } } });
    const reasonOf = async () =>
      findCondition((await etcd.get('given')).status?.conditions as never, 'Ready')?.reason;
    await until(
      'TLSSecretNotFound',
      async () => ((await reasonOf()) === 'TLSSecretNotFound' ? true : undefined),
      60_000,
      500,
    );
    // A peer certificate that names no member of this cluster.
    const now = new Date();
    const peerCa = await issueCa({ cn: 'my-peer-ca', now });
    const leaf = await issueLeaf({
      ca: peerCa,
      cn: 'elsewhere',
      dns: ['*.other-etcd-peers.elsewhere.svc'],
      usages: ['serverAuth', 'clientAuth'],
      now,
    });
    await createSecret(b, ns(), 'my-peer', {
      'tls.crt': leaf.cert,
      'tls.key': leaf.key,
      'ca.crt': peerCa.cert,
    });
    const invalid = await until(
      'TLSSecretInvalid',
      async () => {
        const c = findCondition((await etcd.get('given')).status?.conditions as never, 'Ready');
        return c?.reason === 'TLSSecretInvalid' ? c : undefined;
      },
      60_000,
      500,
    );
    expect(invalid.message).toContain('my-peer');
    expect(await etcd.pods('given')).toEqual([]);
  });

  // docs/etcd.md, Renewal: a generated certificate is issued again 90 days before it ends, and
  // members serve the new one from their next handshake, with no restart (the node agent swaps
  // the mounted Secret's files, as a kubelet does; etcd reads them at every handshake).
  it('renews a server certificate that ends within 90 days, and every member serves the new one without a restart', async () => {
    const pem = async (name: string, key: string) =>
      Buffer.from((await secret(name)).data?.[key] ?? '', 'base64').toString();
    const current = new X509Certificate(await pem('main-etcd-server-tls', 'tls.crt'));
    const names = current.subjectAltName?.split(', ') ?? [];
    const now = new Date();
    // The same names and CA as Tideway's, ending in 30 days: what a cluster 335 days old has.
    const ending = await issueLeaf({
      ca: {
        cert: await pem('main-etcd-ca', 'client-ca.crt'),
        key: await pem('main-etcd-ca', 'client-ca.key'),
      },
      cn: 'main-etcd-server',
      dns: names.filter((n) => n.startsWith('DNS:')).map((n) => n.slice(4)),
      ips: names.filter((n) => n.startsWith('IP Address:')).map((n) => n.slice(11)),
      usages: ['serverAuth', 'clientAuth'],
      now,
      days: 30,
    });
    const members = await etcd.pods('main');
    expect(members).toHaveLength(3);
    const pidsOf = (pods: typeof members) =>
      Promise.all(pods.map((p) => b.faults.containerPids(ns(), p.metadata?.name ?? '')));
    const pidsBefore = await pidsOf(members);
    const old = await secret('main-etcd-server-tls');
    await b.core.replaceNamespacedSecret({
      namespace: ns(),
      name: 'main-etcd-server-tls',
      body: {
        ...old,
        data: {
          ...old.data,
          'tls.crt': Buffer.from(ending.cert).toString('base64'),
          'tls.key': Buffer.from(ending.key).toString('base64'),
        },
      },
    });

    const renewed = await until(
      'a renewed server certificate',
      async () => {
        const c = new X509Certificate(await pem('main-etcd-server-tls', 'tls.crt'));
        return c.validToDate.getTime() - Date.now() > 300 * 86_400_000 &&
          c.serialNumber !== current.serialNumber
          ? c
          : undefined;
      },
      60_000,
      500,
    );
    const client = {
      ca: await pem('main-etcd-client-tls', 'ca.crt'),
      cert: await pem('main-etcd-client-tls', 'tls.crt'),
      key: await pem('main-etcd-client-tls', 'tls.key'),
    };
    /** The certificate a member presents in a new handshake on its client port. */
    const served = (ip: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(
          { host: ip, port: 2379, ...client, servername: `main-etcd.${ns()}.svc` },
          () => {
            resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
            socket.end();
          },
        );
        socket.once('error', reject);
        socket.setTimeout(3000, () => socket.destroy(new Error('handshake timed out')));
      });
    for (const p of members)
      await until(
        `${p.metadata?.name} serving the renewed certificate`,
        async () =>
          (await served(p.status?.podIP ?? '').catch(() => '')) === renewed.fingerprint256 ? true : undefined,
        60_000,
        500,
      );
    await expect
      .poll(async () => eventReasons(b, ns(), 'main'), EVENTS_RECORDED)
      .toContain('CertificateRenewed');
    // The same processes: nothing was restarted to take the new certificate.
    const after = await etcd.pods('main');
    expect(after.map((p) => p.metadata?.uid)).toEqual(members.map((p) => p.metadata?.uid));
    expect(await pidsOf(after)).toEqual(pidsBefore);
    const restarts = after.flatMap((p) => p.status?.containerStatuses?.map((c) => c.restartCount) ?? []);
    expect(restarts.length).toBeGreaterThanOrEqual(3);
    expect(restarts.every((n) => n === 0)).toBe(true);
  });
});
