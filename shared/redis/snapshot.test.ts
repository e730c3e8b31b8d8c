import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RespError } from './resp.ts';
import { EOF_MARK_LENGTH, SyncProtocolError, SyncReplyParser } from './snapshot.ts';

/** Feeds `wire` to a fresh parser in pieces cut at `cuts`; returns what came out, joined. */
const feed = (wire: Buffer, cuts: number[], replies = 0) => {
  const p = new SyncReplyParser(replies);
  const payload: Buffer[] = [];
  const answers: (string | RespError)[] = [];
  let header: unknown;
  let doneAt = -1;
  let from = 0;
  for (const to of [...cuts, wire.length]) {
    const out = p.push(wire.subarray(from, to));
    payload.push(...out.payload);
    answers.push(...out.replies);
    header ??= out.header;
    if (out.done && doneAt < 0) doneAt = to;
    from = to;
  }
  return { payload: Buffer.concat(payload), answers, header, done: p.done, doneAt };
};

const everyCut = (length: number) => Array.from({ length: length - 1 }, (_, i) => [i + 1]);

describe('SyncReplyParser', () => {
  const rdb = Buffer.concat([
    Buffer.from('REDIS0011'),
    randomBytes(100),
    Buffer.from([0xff]),
    randomBytes(8),
  ]);

  it('reads the replies, skips keepalives, and takes exactly <len> payload bytes however the input is cut', () => {
    const wire = Buffer.concat([
      Buffer.from('+OK\r\n-ERR Unrecognized REPLCONF option: rdb-only\r\n\n\n\n'),
      Buffer.from(`$${rdb.length}\r\n`),
      rdb,
      // An older server goes on with the replication stream: none of it is payload.
      Buffer.from('*1\r\n$4\r\nPING\r\n'),
    ]);
    for (const cuts of [[], ...everyCut(wire.length)]) {
      const r = feed(wire, cuts, 2);
      expect(r.payload.equals(rdb)).toBe(true);
      expect(r.header).toEqual({ form: 'disk', size: rdb.length });
      expect(r.answers[0]).toBe('OK');
      expect(r.answers[1]).toBeInstanceOf(RespError);
      expect(r.done).toBe(true);
    }
  });

  it('ends a diskless payload at its EOF mark, wherever the mark is cut', () => {
    const mark = Buffer.from(randomBytes(20).toString('hex'));
    expect(mark.length).toBe(EOF_MARK_LENGTH);
    // A payload holding most of the mark does not end early.
    const payload = Buffer.concat([rdb, mark.subarray(0, 39), Buffer.from('x'), rdb]);
    const wire = Buffer.concat([Buffer.from(`\n\n$EOF:${mark}\r\n`), payload, mark]);
    for (const cuts of [[], ...everyCut(wire.length), [10, 60, 61, wire.length - 1]]) {
      const r = feed(wire, cuts);
      expect(r.header).toEqual({ form: 'diskless', size: undefined });
      expect(r.payload.equals(payload)).toBe(true);
      expect(r.done).toBe(true);
      expect(r.doneAt).toBe(wire.length);
    }
  });

  it('is not done while the mark has not arrived (a truncated diskless transfer)', () => {
    const mark = Buffer.from(randomBytes(20).toString('hex'));
    const wire = Buffer.concat([Buffer.from(`$EOF:${mark}\r\n`), rdb, mark.subarray(0, 30)]);
    const r = feed(wire, [50]);
    expect(r.done).toBe(false);
    // Never more than the bytes that cannot be the mark.
    expect(r.payload.length).toBe(rdb.length + 30 - EOF_MARK_LENGTH);
  });

  it('is not done before <len> bytes arrived', () => {
    const r = feed(Buffer.concat([Buffer.from(`$${rdb.length}\r\n`), rdb.subarray(0, 50)]), [7]);
    expect(r.done).toBe(false);
    expect(r.payload.equals(rdb.subarray(0, 50))).toBe(true);
  });

  it('turns an error reply to SYNC into a RespError, and anything else into a protocol error', () => {
    expect(() => new SyncReplyParser(0).push(Buffer.from("\n-NOMASTERLINK Can't SYNC\r\n"))).toThrow(
      /NOMASTERLINK/,
    );
    expect(() => new SyncReplyParser(0).push(Buffer.from('+FULLRESYNC abc 0\r\n'))).toThrow(
      SyncProtocolError,
    );
    expect(() => new SyncReplyParser(0).push(Buffer.from('$EOF:short\r\n'))).toThrow(/not 40/);
    expect(() => new SyncReplyParser(0).push(Buffer.from('$12x\r\n'))).toThrow(SyncProtocolError);
    expect(() => new SyncReplyParser(1).push(Buffer.from(':1\r\n'))).toThrow(/before SYNC/);
    // A server that never ends its line cannot make us hold unbounded memory.
    const p = new SyncReplyParser(0);
    expect(() => {
      for (let i = 0; i < 100; i++) p.push(Buffer.alloc(100, 0x41));
    }).toThrow(/longer than 1024 bytes/);
  });

  it('takes an empty length-prefixed payload as done (the caller then finds no RDB in it)', () => {
    const r = feed(Buffer.from('$0\r\n'), []);
    expect(r.done).toBe(true);
    expect(r.payload.length).toBe(0);
  });
});
