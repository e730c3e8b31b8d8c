import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from './kube.ts';

const config = (cluster: string, server: string) =>
  [
    'apiVersion: v1',
    'kind: Config',
    `current-context: ${cluster}`,
    `clusters: [{ name: ${cluster}, cluster: { server: '${server}' } }]`,
    `users: [{ name: ${cluster}, user: { token: t } }]`,
    `contexts: [{ name: ${cluster}, context: { cluster: ${cluster}, user: ${cluster} } }]`,
  ].join('\n');

describe('loadKubeConfig: KUBECONFIG as kubectl reads it', () => {
  let dir = '';
  const file = (name: string) => join(dir, name);
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-kubeconfig-'));
    await writeFile(file('a.yaml'), config('a', 'https://127.0.0.1:6443'));
    await writeFile(file('b.yaml'), config('b', 'https://127.0.0.1:7443'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const load = (...files: string[]) => loadKubeConfig({ KUBECONFIG: files.join(delimiter) });

  it('skips a file that does not exist, wherever it is in the list', () => {
    expect(load(file('missing.yaml'), file('a.yaml')).getCurrentCluster()?.server).toBe(
      'https://127.0.0.1:6443',
    );
    expect(load(file('a.yaml'), file('missing.yaml')).getCurrentCluster()?.server).toBe(
      'https://127.0.0.1:6443',
    );
  });

  it('merges the files in order: the first one’s current context wins, the others’ contexts are there', () => {
    const kc = load(file('b.yaml'), file('a.yaml'));
    expect(kc.getCurrentContext()).toBe('b');
    expect(kc.getContexts().map((c) => c.name)).toEqual(['b', 'a']);
  });

  it('keeps an entry named in an earlier file as that file has it, as kubectl does', async () => {
    await writeFile(file('a2.yaml'), config('a', 'https://127.0.0.1:9443'));
    const kc = load(file('a.yaml'), file('a2.yaml'), file('b.yaml'));
    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(kc.getContexts().map((c) => c.name)).toEqual(['a', 'b']);
  });

  it('takes the current context from the first file that names one', async () => {
    await writeFile(
      file('creds.yaml'),
      'apiVersion: v1\nkind: Config\nusers: [{ name: extra, user: { token: x } }]\n',
    );
    expect(load(file('creds.yaml'), file('b.yaml')).getCurrentContext()).toBe('b');
  });

  it('says so when none of the files exists', () => {
    expect(() => load(file('x.yaml'), file('y.yaml'))).toThrow(
      /KUBECONFIG names .*x\.yaml.*, which does not exist/,
    );
  });
});
