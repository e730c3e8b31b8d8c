import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { BinaryClient, Reply } from './resp.ts';

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

/**
 * Every core type in the encodings a server picks by size: strings (integer, text, binary,
 * large), lists, sets (intset, listpack/hashtable), sorted sets and hashes small and large,
 * a stream with deleted entries, two consumer groups, pending entries and an idle consumer; TTLs;
 * keys in a second database; binary key names. `largeBytes` sets the size of the large string.
 */
export const populate = async (c: BinaryClient, o: { largeBytes?: number; seed?: string } = {}) => {
  const seed = o.seed ?? 'x';
  const p: Promise<unknown>[] = [];
  const call = (...args: (string | number | Buffer)[]) => p.push(c.call(...args));
  call('SET', 'str:text', `hello ${seed}`);
  call('SET', 'str:int', '1234567');
  call('SET', 'str:binary', Buffer.concat([ALL_BYTES, randomBytes(1000), ALL_BYTES]));
  call('SET', Buffer.from([0, 0xff, 0x0d, 0x0a, 0x80, 0x41]), 'binary key name');
  call('SET', 'str:large', randomBytes(o.largeBytes ?? 3 * 1024 * 1024));
  call('SET', 'str:compressible', 'abc'.repeat(100_000));
  call('RPUSH', 'list:small', 'a', 'b', Buffer.from([0, 1, 2]), '42');
  for (let i = 0; i < 5; i++)
    call(
      'RPUSH',
      'list:large',
      ...Array.from({ length: 1000 }, (_, j) => `item-${i}-${j}-${'x'.repeat(j % 70)}`),
    );
  call('SADD', 'set:int', ...Array.from({ length: 100 }, (_, i) => String(i * 7)));
  call('SADD', 'set:small', 'x', 'y', Buffer.from([0xfe, 0xff]));
  call('SADD', 'set:large', ...Array.from({ length: 3000 }, (_, i) => `member-${i}`));
  call('ZADD', 'zset:small', '1.5', 'a', '-inf', 'low', '+inf', 'high', '0', Buffer.from([0]));
  call('ZADD', 'zset:large', ...Array.from({ length: 1000 }, (_, i) => [String(i / 3), `m${i}`]).flat());
  call('HSET', 'hash:small', 'f1', 'v1', 'f2', Buffer.from([0, 1, 0xff]), 'n', '17');
  call(
    'HSET',
    'hash:large',
    ...Array.from({ length: 2000 }, (_, i) => [
      `field-${i}`,
      i % 10 === 0 ? 'y'.repeat(200) : String(i),
    ]).flat(),
  );
  for (let i = 1; i <= 100; i++)
    call('XADD', 'stream:s', `${1_700_000_000_000 + i}-0`, 'n', String(i), 'k', seed);
  call('XDEL', 'stream:s', `${1_700_000_000_000 + 50}-0`);
  call('XGROUP', 'CREATE', 'stream:s', 'g1', '0');
  call('XGROUP', 'CREATE', 'stream:s', 'g2', '$');
  await Promise.all(p.splice(0));
  // Pending entries: c1 reads 10 and acknowledges 3, c2 reads 5 more, c3 exists and reads none.
  await c.call('XREADGROUP', 'GROUP', 'g1', 'c1', 'COUNT', '10', 'STREAMS', 'stream:s', '>');
  await c.call(
    'XACK',
    'stream:s',
    'g1',
    `${1_700_000_000_000 + 1}-0`,
    `${1_700_000_000_000 + 2}-0`,
    `${1_700_000_000_000 + 3}-0`,
  );
  await c.call('XREADGROUP', 'GROUP', 'g1', 'c2', 'COUNT', '5', 'STREAMS', 'stream:s', '>');
  await c.call('XGROUP', 'CREATECONSUMER', 'stream:s', 'g1', 'c3');
  call('SET', 'ttl:str', 'expires', 'PX', '3600000');
  call('HSET', 'ttl:hash', 'a', '1');
  call('EXPIRE', 'ttl:hash', '7200');
  call('SELECT', '3');
  call('SET', 'db3:key', 'in database 3');
  call('RPUSH', 'db3:list', '1', '2', '3');
  call('SELECT', '0');
  await Promise.all(p);
};

const hex = (r: Reply): unknown =>
  Buffer.isBuffer(r) ? r.toString('hex') : Array.isArray(r) ? r.map(hex) : r instanceof Error ? r.message : r;
const sortedHex = (r: Reply) => (r as Buffer[]).map((b) => b.toString('hex')).sort();
const pairs = (r: Reply) => {
  const a = r as Buffer[];
  const out: [string, string][] = [];
  for (let i = 0; i < a.length; i += 2)
    out.push([String(a[i]?.toString('hex')), String(a[i + 1]?.toString('hex'))]);
  return out.sort(([x], [y]) => x.localeCompare(y));
};

/** One key's value in a form that is equal exactly when the logical content is. */
const logicalValue = async (c: BinaryClient, key: Buffer, type: string): Promise<unknown> => {
  switch (type) {
    case 'string':
      return hex(await c.call('GET', key));
    case 'list':
      return hex(await c.call('LRANGE', key, 0, -1));
    case 'set':
      return sortedHex(await c.call('SMEMBERS', key));
    case 'zset':
      return hex(await c.call('ZRANGE', key, 0, -1, 'WITHSCORES'));
    case 'hash':
      return pairs(await c.call('HGETALL', key));
    case 'stream':
      // FULL: entries, every group with its last id, pending entries with their consumer,
      // delivery count and time, and every consumer with its pending list.
      return {
        entries: hex(await c.call('XRANGE', key, '-', '+')),
        full: hex(await c.call('XINFO', 'STREAM', key, 'FULL')),
      };
    default:
      throw new Error(`unexpected type ${type}`);
  }
};

export type Content = {
  /** `<db>/<hex key>` → type and value, canonical. */
  values: Map<string, string>;
  /** `<db>/<hex key>` → absolute expiry in ms, for keys that have one. */
  expiries: Map<string, number>;
  /** A digest of `values`, to show in messages. */
  digest: string;
};

/** The logical content of every database of a server. */
export const contentOf = async (c: BinaryClient): Promise<Content> => {
  const values = new Map<string, string>();
  const expiries = new Map<string, number>();
  const keyspace = await c.text('INFO', 'keyspace');
  const dbs = [...keyspace.matchAll(/^db(\d+):/gm)].map((m) => Number(m[1]));
  const hasExpireTime = await c
    .call('COMMAND', 'INFO', 'PEXPIRETIME')
    .then((r) => Array.isArray(r) && r[0] !== null);
  for (const db of dbs) {
    await c.call('SELECT', db);
    let cursor = '0';
    do {
      const [next, keys] = (await c.call('SCAN', cursor, 'COUNT', 1000)) as [Buffer, Buffer[]];
      cursor = next.toString();
      for (const key of keys) {
        const id = `${db}/${key.toString('hex')}`;
        const type = String(await c.call('TYPE', key));
        values.set(id, JSON.stringify([type, await logicalValue(c, key, type)]));
        if (hasExpireTime) {
          const at = Number(await c.call('PEXPIRETIME', key));
          if (at > 0) expiries.set(id, at);
        } else {
          const ttl = Number(await c.call('PTTL', key));
          if (ttl > 0) expiries.set(id, Date.now() + ttl);
        }
      }
    } while (cursor !== '0');
  }
  await c.call('SELECT', 0);
  const digest = createHash('sha256')
    .update(JSON.stringify([...values].sort(([a], [b]) => a.localeCompare(b))))
    .digest('hex')
    .slice(0, 16);
  return { values, expiries, digest };
};

/**
 * The two servers hold the same logical content: the same keys with the same types and values,
 * and the same expiries (exactly where the server reports absolute times; within 2 s otherwise).
 */
export const expectSameContent = (actual: Content, expected: Content) => {
  expect(actual.values.size).toBeGreaterThan(0);
  expect([...actual.values.keys()].sort()).toEqual([...expected.values.keys()].sort());
  for (const [k, v] of expected.values) expect(actual.values.get(k), `value of ${k}`).toBe(v);
  expect([...actual.expiries.keys()].sort()).toEqual([...expected.expiries.keys()].sort());
  for (const [k, at] of expected.expiries)
    expect(Math.abs((actual.expiries.get(k) ?? 0) - at), `expiry of ${k}`).toBeLessThanOrEqual(2000);
};

/** `mb` MiB of incompressible values (1 MiB each), for transfers that take a while. */
export const fillRandom = async (c: BinaryClient, mb: number, prefix = 'big') => {
  const p: Promise<unknown>[] = [];
  for (let i = 0; i < mb; i++) p.push(c.call('SET', `${prefix}:${i}`, randomBytes(1024 * 1024)));
  await Promise.all(p);
};
