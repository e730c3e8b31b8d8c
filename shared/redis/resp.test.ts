import { describe, expect, it } from 'vitest';
import { encodeCommand, RespError, RespParser } from './resp.ts';

const parseAll = (...chunks: string[]) => {
  const p = new RespParser();
  const out = [];
  for (const c of chunks) {
    p.push(Buffer.from(c));
    out.push(...p.values());
  }
  return out;
};

describe('RESP', () => {
  it('encodes a command as an array of bulk strings', () => {
    expect(encodeCommand(['SET', 'k', 12]).toString()).toBe('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n');
  });

  it('parses every reply type', () => {
    const [simple, int, bulk, nil, arr, err] = parseAll(
      '+OK\r\n:42\r\n$5\r\nhello\r\n$-1\r\n*2\r\n:1\r\n$1\r\nx\r\n-ERR no\r\n',
    );
    expect([simple, int, bulk, nil, arr]).toEqual(['OK', 42, 'hello', null, [1, 'x']]);
    expect(err).toBeInstanceOf(RespError);
    expect((err as RespError).code).toBe('ERR');
  });

  it('waits for values split across chunks, including inside a bulk string and nested arrays', () => {
    expect(parseAll('$11\r\nhello', ' world\r\n*2\r\n*1\r\n:', '1\r\n+a\r\n')).toEqual([
      'hello world',
      [[1], 'a'],
    ]);
  });

  it('marks LOADING as retryable and ERR as not', () => {
    expect(new RespError('LOADING Redis is loading').retry).toBe(true);
    expect(new RespError('ERR unknown command').retry).toBe(false);
  });
});
