import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace, sleep, until } from '../support/bed.ts';

const POD = 'reader';
const DIR = '/etc/tw';
// Big enough that writing one takes many write(2) calls: a non-atomic refresh would show halves.
const big = (tag: string, size: number) => `${tag}:${'abcdefgh'.repeat(size / 8)}:${tag}\n`;
const configValue = (v: number) => big(`config v${v}`, 256 * 1024);
const tokenValue = (v: number) => big(`token v${v}`, 64 * 1024);
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** What the reader inside the pod saw, per file: the version of every complete read, in order. */
type Seen = Map<string, number[]>;

/**
 * kubelet's contract for ConfigMap, Secret and downwardAPI volumes, checked from inside the pod's
 * mount namespace (what its process sees): files change in a running pod, atomically, and stop
 * changing when the pod is gone.
 */
describe('configMap, secret and downwardAPI volumes of a running pod', () => {
  const b = bed();
  let ns = '';
  let pid = 0;
  let uid = '';

  const writeConfig = (v: number) => ({
    metadata: { name: 'cfg' },
    data: { value: configValue(v), 'small.conf': `small v${v}\n` },
  });
  const writeSecret = (v: number) => ({
    metadata: { name: 'auth' },
    data: { token: Buffer.from(tokenValue(v)).toString('base64') },
  });
  /** Runs a shell script as a process of the pod would: its mount namespace and root. */
  const inPod = async (script: string) =>
    (await promisify(execFile)('nsenter', ['-t', String(pid), '-m', '-r', '--', 'sh', '-c', script])).stdout;
  const annotate = (note: string) =>
    b.core.patchNamespacedPod({
      namespace: ns,
      name: POD,
      body: [{ op: 'replace', path: '/metadata/annotations/note', value: note }],
    });

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'vol');
    await b.core.createNamespacedConfigMap({ namespace: ns, body: writeConfig(1) });
    await b.core.createNamespacedSecret({ namespace: ns, body: writeSecret(1) });
    await b.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: POD, annotations: { note: 'one' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'reader',
              image: 'busybox',
              command: ['sleep', '100000'],
              volumeMounts: [
                { name: 'config', mountPath: `${DIR}/config` },
                { name: 'auth', mountPath: `${DIR}/auth`, readOnly: true },
                { name: 'picked', mountPath: `${DIR}/picked` },
                { name: 'late', mountPath: `${DIR}/late` },
                { name: 'podinfo', mountPath: `${DIR}/podinfo` },
                { name: 'config', mountPath: `${DIR}/single.conf`, subPath: 'small.conf' },
              ],
            },
          ],
          volumes: [
            { name: 'config', configMap: { name: 'cfg' } },
            { name: 'auth', secret: { secretName: 'auth', defaultMode: 0o400 } },
            {
              name: 'picked',
              configMap: { name: 'cfg', items: [{ key: 'value', path: 'sub/picked', mode: 0o440 }] },
            },
            { name: 'late', configMap: { name: 'late', optional: true } },
            {
              name: 'podinfo',
              downwardAPI: {
                items: [{ path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } }],
              },
            },
          ],
        },
      },
    });
    const pod = await until(
      `${POD} Ready`,
      async () => {
        const p = await b.core.readNamespacedPod({ namespace: ns, name: POD });
        return isReady(p) ? p : undefined;
      },
      120_000,
    );
    uid = pod.metadata?.uid ?? '';
    pid = (await b.faults.containerPids(ns, POD)).reader ?? 0;
    expect(pid).toBeGreaterThan(0);
    // The node agent reports the container running while its launcher still mounts the volumes;
    // the process has its file system view once it chrooted into the pod's root.
    await until('the container process in its own root', async () =>
      readlinkSync(`/proc/${pid}/root`) !== '/' ? true : undefined,
    );
  });

  afterAll(async () => {
    await b.core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it("shows the files in kubelet's layout: symlinks through ..data, modes, read-only", async () => {
    expect((await inPod(`ls -A ${DIR}/config`)).split('\n')).toEqual(
      expect.arrayContaining(['..data', 'value', 'small.conf']),
    );
    expect((await inPod(`readlink ${DIR}/config/value`)).trim()).toBe('..data/value');
    expect(md5(await inPod(`cat ${DIR}/config/value`))).toBe(md5(configValue(1)));
    expect(md5(await inPod(`cat ${DIR}/auth/token`))).toBe(md5(tokenValue(1)));
    expect(await inPod(`stat -L -c %a ${DIR}/auth/token ${DIR}/picked/sub/picked`)).toBe('400\n440\n');
    expect(await inPod(`cat ${DIR}/single.conf`)).toBe('small v1\n');
    expect(await inPod(`ls ${DIR}/late`)).toBe(''); // optional and missing: an empty volume
    expect(await inPod(`cat ${DIR}/podinfo/annotations`)).toContain('note="one"');
    // kubelet mounts API data read-only even when the pod does not ask for it.
    expect(await inPod(`touch ${DIR}/config/x 2>/dev/null && echo written || echo refused`)).toBe(
      'refused\n',
    );
  });

  it('refreshes ConfigMap and Secret files in the running pod, each read one whole version', async () => {
    const files = {
      [`${DIR}/config/value`]: configValue,
      [`${DIR}/picked/sub/picked`]: configValue,
      [`${DIR}/auth/token`]: tokenValue,
    };
    const versions = new Map(
      Object.entries(files).flatMap(([path, value]) => [1, 2, 3].map((v) => [`${md5(value(v))} ${path}`, v])),
    );
    const seen: Seen = new Map(Object.keys(files).map((f) => [f, []]));
    const unknown: string[] = [];
    // One process in the pod's mount namespace reading all three files over and over.
    const reader: ChildProcess = spawn(
      'nsenter',
      [
        '-t',
        String(pid),
        '-m',
        '-r',
        '--',
        'sh',
        '-c',
        `while :; do md5sum ${Object.keys(files).join(' ')} 2>/dev/null; done`,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    createInterface({ input: reader.stdout! }).on('line', (line) => {
      const [hash, path] = line.split(/\s+/);
      const v = versions.get(`${hash} ${path}`);
      if (v === undefined) unknown.push(line);
      else seen.get(path ?? '')?.push(v);
    });
    const reached = (v: number) => async () =>
      [...seen.values()].every((s) => s.at(-1) === v) ? true : undefined;
    try {
      await until('the reader to see version 1', reached(1), 30_000);
      for (const v of [2, 3]) {
        await b.core.replaceNamespacedConfigMap({ namespace: ns, name: 'cfg', body: writeConfig(v) });
        await b.core.replaceNamespacedSecret({ namespace: ns, name: 'auth', body: writeSecret(v) });
        await until(`every file at version ${v} inside the pod`, reached(v), 30_000);
      }
    } finally {
      reader.kill('SIGKILL');
    }
    expect(unknown).toEqual([]); // never a half-written or mixed file
    for (const [path, s] of seen) {
      expect(s.length, path).toBeGreaterThan(3);
      // Once a version was seen, never an older one: one switch per file, no flicker.
      expect(s, path).toEqual([...s].sort((x, y) => x - y));
    }
    // A subPath mount is the file as of container start, as with kubelet: never refreshed.
    expect(await inPod(`cat ${DIR}/single.conf`)).toBe('small v1\n');
  });

  it('keeps a deleted required ConfigMap, follows an optional one, refreshes downwardAPI', async () => {
    await b.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'late' }, data: { 'late.conf': 'here\n' } },
    });
    await until('the optional ConfigMap to appear in the pod', async () =>
      (await inPod(`cat ${DIR}/late/late.conf 2>/dev/null || true`)) === 'here\n' ? true : undefined,
    );

    await b.core.deleteNamespacedConfigMap({ namespace: ns, name: 'cfg' });
    await b.core.deleteNamespacedConfigMap({ namespace: ns, name: 'late' });
    await until('the optional ConfigMap to disappear from the pod', async () =>
      (await inPod(`ls ${DIR}/late`)) === '' ? true : undefined,
    );
    // Two refreshes seen after the deletion (the second wholly after it), through the pod's
    // annotations: the deleted required ConfigMap was looked at and its files were kept.
    for (const note of ['two', 'three']) {
      await annotate(note);
      await until(`annotation ${note} in the pod`, async () =>
        (await inPod(`cat ${DIR}/podinfo/annotations`)).includes(`note="${note}"`) ? true : undefined,
      );
    }
    expect(md5(await inPod(`cat ${DIR}/config/value`))).toBe(md5(configValue(3)));
    expect(md5(await inPod(`cat ${DIR}/picked/sub/picked`))).toBe(md5(configValue(3)));
  });

  it('stops refreshing when the pod is gone: its volumes are not written again', async () => {
    const podDir = join(b.info.dir, 'node', 'pods', uid);
    expect(existsSync(join(podDir, 'volumes', 'config', '..data'))).toBe(true);
    await b.core.deleteNamespacedPod({ namespace: ns, name: POD });
    await until(
      `${POD} gone`,
      async () => ((await b.core.listNamespacedPod({ namespace: ns })).items.length === 0 ? true : undefined),
      60_000,
    );
    expect(existsSync(podDir)).toBe(false);
    await b.core.createNamespacedConfigMap({ namespace: ns, body: writeConfig(4) });
    await b.core.replaceNamespacedSecret({ namespace: ns, name: 'auth', body: writeSecret(4) });
    // Nothing to wait for: a few refresh periods (2 s on the test bed) must pass without a write.
    await sleep(6000);
    expect(existsSync(podDir)).toBe(false);
  });
});
