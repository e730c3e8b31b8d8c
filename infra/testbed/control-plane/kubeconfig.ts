import { readFile, writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

export type KubeconfigOptions = {
  server: string;
  caCert: string;
  clientCert: string;
  clientKey: string;
  user: string;
};

/** A self-contained kubeconfig (certificates inlined) so it can be copied anywhere. */
export const writeKubeconfig = async (file: string, o: KubeconfigOptions): Promise<void> => {
  const b64 = async (f: string) => (await readFile(f)).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'tideway', cluster: { server: o.server, 'certificate-authority-data': await b64(o.caCert) } },
    ],
    users: [
      {
        name: o.user,
        user: {
          'client-certificate-data': await b64(o.clientCert),
          'client-key-data': await b64(o.clientKey),
        },
      },
    ],
    contexts: [{ name: 'tideway', context: { cluster: 'tideway', user: o.user, namespace: 'default' } }],
    'current-context': 'tideway',
  };
  await writeFile(file, stringify(config), { mode: 0o600 });
};
