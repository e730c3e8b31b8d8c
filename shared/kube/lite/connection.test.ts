import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeConfigError, loadKubeConnection } from './connection.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const kubeconfig = (user: Record<string, string>, cluster: Record<string, unknown> = {}) => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  writeFileSync(join(dir, 'ca.crt'), 'CA FROM FILE');
  writeFileSync(join(dir, 'token'), 'file-token\n');
  const file = join(dir, 'config');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'b',
      clusters: [
        { name: 'one', cluster: { server: 'https://10.0.0.1:6443' } },
        { name: 'two', cluster: { server: 'https://127.0.0.1:7443/', ...cluster } },
      ],
      users: [{ name: 'u', user }],
      contexts: [
        { name: 'a', context: { cluster: 'one', user: 'u' } },
        { name: 'b', context: { cluster: 'two', user: 'u' } },
      ],
    }),
  );
  return file;
};

describe('loadKubeConnection', () => {
  it('follows the current context, with inline certificates', () => {
    const c = loadKubeConnection({
      KUBECONFIG: kubeconfig(
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
        { 'certificate-authority-data': b64('CA') },
      ),
    });
    expect(c.server).toBe('https://127.0.0.1:7443');
    expect([c.ca?.toString(), c.cert?.toString(), c.key?.toString()]).toEqual(['CA', 'CERT', 'KEY']);
    expect(c.token).toBeUndefined();
  });

  it('reads files relative to the kubeconfig, and a token file on every use', () => {
    const c = loadKubeConnection({
      KUBECONFIG: kubeconfig({ tokenFile: 'token' }, { 'certificate-authority': 'ca.crt' }),
    });
    expect(c.ca?.toString()).toBe('CA FROM FILE');
    expect(c.token?.()).toBe('file-token');
  });

  it('takes an inline token', () => {
    expect(loadKubeConnection({ KUBECONFIG: kubeconfig({ token: 'abc' }) }).token?.()).toBe('abc');
  });

  it('says what is wrong with a kubeconfig it cannot use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    writeFileSync(join(dir, 'bad'), 'clusters: 3\n');
    expect(() => loadKubeConnection({ KUBECONFIG: join(dir, 'bad') })).toThrow(KubeConfigError);
    expect(() => loadKubeConnection({ KUBECONFIG: join(dir, 'missing') })).toThrow(/cannot read kubeconfig/);
  });
});
