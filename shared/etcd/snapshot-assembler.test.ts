import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EtcdProtocolError, EtcdServerError, EtcdSnapshotError } from './errors.ts';
import { gatewaySnapshot, randomChunks } from './fixture.ts';
import { NdjsonDecoder } from './ndjson.ts';
import { SnapshotAssembler } from './snapshot-assembler.ts';

/** Gateway bytes → decoder → assembler, in the given chunks; what it yields, or what it throws. */
const run = (chunks: Buffer[]) => {
  const d = new NdjsonDecoder({ maxLineBytes: 1 << 20 });
  const a = new SnapshotAssembler('http://e:2379');
  const out: Buffer[] = [];
  for (const c of chunks) for (const m of d.push(c)) out.push(a.accept(m));
  for (const m of d.end()) out.push(a.accept(m));
  a.finish();
  return { bytes: Buffer.concat(out), a };
};

const wire = (db: Buffer, o?: Parameters<typeof gatewaySnapshot>[1]) =>
  Buffer.from(gatewaySnapshot(db, o).join(''));
const sha = (b: Buffer) => createHash('sha256').update(b).digest();

describe('SnapshotAssembler', () => {
  it('yields the database then its SHA-256, whatever the chunking', () => {
    const db = randomBytes(100_000);
    const bytes = wire(db, { version: '3.6.0' });
    for (let seed = 1; seed <= 30; seed++) {
      const { bytes: out, a } = run(randomChunks(bytes, seed, 5000));
      expect(out.equals(Buffer.concat([db, sha(db)]))).toBe(true);
      expect([a.dbSize, a.storageVersion]).toEqual([100_000, '3.6.0']);
    }
  });

  it('handles a database of whole blobs (the last data message says 0 remaining, like the hash)', () => {
    const db = randomBytes(3 * 32 * 1024);
    expect(run([wire(db)]).bytes.equals(Buffer.concat([db, sha(db)]))).toBe(true);
    const one = randomBytes(32 * 1024);
    expect(run([wire(one)]).bytes.length).toBe(32 * 1024 + 32);
  });

  it('cut anywhere before the end is SnapshotTruncated (retry)', () => {
    const bytes = wire(randomBytes(70_000), { blob: 20_000 });
    const lineEnds = [...bytes.entries()].filter(([, b]) => b === 0x0a).map(([i]) => i + 1);
    for (const end of lineEnds.slice(0, -1)) {
      const e = (() => {
        try {
          run([bytes.subarray(0, end)]);
        } catch (error) {
          return error;
        }
      })();
      expect(e).toBeInstanceOf(EtcdSnapshotError);
      expect(e).toMatchObject({ reason: 'SnapshotTruncated', retry: true });
    }
  });

  it('a wrong hash is SnapshotChecksum', () => {
    const bytes = wire(randomBytes(5000), { digest: Buffer.alloc(32, 7) });
    expect(() => run([bytes])).toThrow(expect.objectContaining({ reason: 'SnapshotChecksum' }));
  });

  it('an error message in the stream becomes etcd’s error, in 3.6 and 3.5 shape', () => {
    const head = gatewaySnapshot(randomBytes(40_000))[0] as string;
    const v36 = Buffer.from(`${head}{"error":{"code":14,"message":"etcdserver: server stopped"}}\n`);
    expect(() => run([v36])).toThrow(expect.objectContaining({ reason: 'ServerStopped', retry: true }));
    const v35 = Buffer.from(
      `${head}{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: server stopped"}}`,
    );
    expect(() => run([v35])).toThrow(EtcdServerError);
  });

  it('refuses inconsistent remaining_bytes and messages after the hash', () => {
    const lines = gatewaySnapshot(randomBytes(70_000));
    const skipped = Buffer.from([lines[0], lines[2], lines[3]].join(''));
    expect(() => run([skipped])).toThrow(EtcdProtocolError);
    const extra = Buffer.from([...lines, lines[0]].join(''));
    expect(() => run([extra])).toThrow(/after the checksum/);
    expect(() => run([Buffer.from('{"result":{"blob":"%%%"}}\n')])).toThrow(/not base64/);
    expect(() => run([Buffer.from('{"other":1}\n')])).toThrow(/neither result nor error/);
  });

  it('an empty stream is truncated', () => {
    expect(() => run([])).toThrow(expect.objectContaining({ reason: 'SnapshotTruncated' }));
  });
});
