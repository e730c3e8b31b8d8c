import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../backup/object-store.ts';
import { storeSnapshot } from '../../backup/pipeline.ts';
import { fetchSnapshot, mountedSecrets, restoreStepOf, sourceStore } from './fetch.ts';
import type { RestoreSource } from './source.ts';

/** An etcd snapshot's shape: a database (a multiple of 512 bytes here) then its SHA-256. */
const snapshot = (dbBytes: number) => {
  const db = randomBytes(dbBytes);
  return Buffer.concat([db, createHash('sha256').update(db).digest()]);
};

const memoryStore = () => {
  const objects = new Map<string, Buffer>();
  const store = {
    url: (k: string) => `s3://bk/${k}`,
    upload: async (key: string, body: AsyncIterable<Buffer>) => {
      const parts: Buffer[] = [];
      for await (const c of body) parts.push(Buffer.from(c));
      objects.set(key, Buffer.concat(parts));
      return { size: objects.get(key)?.length ?? 0, parts: 1 };
    },
    download: async (key: string) => Readable.from([objects.get(key) ?? Buffer.alloc(0)]),
  } as unknown as ObjectStore;
  return { store, objects };
};

describe('fetching the snapshot a new EtcdCluster starts from', () => {
  let dir = '';
  const key = randomBytes(32);
  const snap = snapshot(512 * 300);
  const { store, objects } = memoryStore();
  let source: RestoreSource;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tideway-fetch-'));
    const stored = await storeSnapshot({
      rdb: Readable.from([snap]),
      store,
      key: 'ns/_etcd/old/b1.db.zst.enc',
      compression: 'zstd',
      encryptionKey: key,
      partSize: () => 5 * 1024 * 1024,
    });
    source = {
      backup: 'b1',
      store: { s3: { bucket: 'bk', credentialsSecret: { name: 's3' } } },
      key: 'ns/_etcd/old/b1.db.zst.enc',
      sha256: stored.sha256,
      size: stored.size,
      dbSize: snap.length,
      compression: 'zstd',
      encryptionSecret: 'backup-key',
    };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('writes the snapshot as etcd made it, once every check passed', async () => {
    const out = join(dir, 'ok.db');
    await fetchSnapshot({ source, resolved: { store, encryption: { key, secretName: 'k' } }, out });
    expect((await readFile(out)).equals(snap)).toBe(true);
    expect(existsSync(`${out}.part`)).toBe(false);
  });

  it('leaves nothing when the object changed after it was stored', async () => {
    const out = join(dir, 'changed.db');
    const object = objects.get(source.key) ?? Buffer.alloc(0);
    const changed = Buffer.from(object);
    changed[changed.length - 100] = (changed[changed.length - 100] ?? 0) ^ 1;
    objects.set('changed', changed);
    await expect(
      fetchSnapshot({
        source: { ...source, key: 'changed' },
        resolved: { store, encryption: { key, secretName: 'k' } },
        out,
      }),
    ).rejects.toMatchObject({ retry: false });
    expect(existsSync(out) || existsSync(`${out}.part`)).toBe(false);
  });

  it('refuses a snapshot whose own SHA-256 does not match (damaged before it was stored)', async () => {
    const bad = Buffer.from(snap);
    bad[10] = (bad[10] ?? 0) ^ 1;
    const stored = await storeSnapshot({
      rdb: Readable.from([bad]),
      store,
      key: 'bad',
      compression: 'none',
      partSize: () => 5 * 1024 * 1024,
    });
    const out = join(dir, 'bad.db');
    await expect(
      fetchSnapshot({
        source: { ...source, key: 'bad', sha256: stored.sha256, size: stored.size, compression: 'none' },
        resolved: { store },
        out,
      }),
    ).rejects.toMatchObject({ reason: 'SnapshotChecksum' });
    expect(existsSync(out)).toBe(false);
  });

  it('reads the store’s Secrets from files, and names a missing one without any value', async () => {
    const secrets = join(dir, 'secrets');
    await mkdir(join(secrets, 's3'), { recursive: true });
    await writeFile(join(secrets, 's3', 'AWS_ACCESS_KEY_ID'), 'id\n');
    await writeFile(join(secrets, 's3', 'AWS_SECRET_ACCESS_KEY'), 'very-secret');
    await expect(sourceStore(source, 'ns', mountedSecrets(secrets))).rejects.toMatchObject({
      reason: 'EncryptionSecretNotFound',
    });
    await mkdir(join(secrets, 'backup-key'));
    await writeFile(join(secrets, 'backup-key', 'key'), key);
    const resolved = await sourceStore(source, 'ns', mountedSecrets(secrets));
    expect(resolved.encryption?.key.equals(key)).toBe(true);
    const error = await sourceStore(
      { ...source, store: { s3: { bucket: 'bk', credentialsSecret: { name: 'nope' } } } },
      'ns',
      mountedSecrets(secrets),
    ).catch((e: Error) => e);
    expect(error).toMatchObject({ reason: 'CredentialsSecretNotFound' });
    expect(String((error as Error).message)).not.toContain('very-secret');
    // An optional volume whose Secret is missing: a directory with kubelet's entries only.
    await mkdir(join(secrets, 'gone', '..2026_11_28_10_00_00.1'), { recursive: true });
    await symlink('..2026_11_28_10_00_00.1', join(secrets, 'gone', '..data'));
    await expect(mountedSecrets(secrets)('gone')).resolves.toBeUndefined();
  });

  it('looks at the member’s volume before the fetched file: a restore cut short is never "done"', async () => {
    const d = join(dir, 'step');
    const out = join(d, 'restore', 'snapshot.db');
    const data = join(d, 'data');
    await mkdir(join(d, 'restore'), { recursive: true });
    expect(await restoreStepOf(out, data)).toBe('fetch');
    await writeFile(out, snap);
    expect(await restoreStepOf(out, data)).toBe('fetched');
    // etcdutl stopped after the database, before the WAL: the fetched file must not hide it.
    await mkdir(join(data, 'member', 'snap'), { recursive: true });
    expect(await restoreStepOf(out, data)).toBe('interrupted');
    await mkdir(join(data, 'member', 'wal'));
    expect(await restoreStepOf(out, data)).toBe('restored');
  });
});
