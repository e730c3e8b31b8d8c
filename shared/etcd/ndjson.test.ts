import { describe, expect, it } from 'vitest';
import { EtcdProtocolError } from './errors.ts';
import { randomChunks } from './fixture.ts';
import { NdjsonDecoder } from './ndjson.ts';

const values = [
  { a: 1 },
  { result: { blob: 'QUJD', note: 'é€😀' } },
  { error: { code: 14, message: 'x' } },
  [1, 2],
];
const text = Buffer.from(`${values.map((v) => JSON.stringify(v)).join('\n')}\n`);

const decodeAll = (chunks: Buffer[], max = 1024) => {
  const d = new NdjsonDecoder({ maxLineBytes: max });
  return [...chunks.flatMap((c) => d.push(c)), ...d.end()];
};

describe('NdjsonDecoder', () => {
  it('decodes whatever the split: every single cut point, including inside multi-byte characters', () => {
    for (let cut = 0; cut <= text.length; cut++) {
      expect(decodeAll([text.subarray(0, cut), text.subarray(cut)])).toEqual(values);
    }
  });

  it('decodes byte by byte and in random chunkings', () => {
    expect(decodeAll([...text].map((b) => Buffer.from([b])))).toEqual(values);
    for (let seed = 1; seed < 200; seed++) expect(decodeAll(randomChunks(text, seed, 17))).toEqual(values);
  });

  it('takes a last line without newline (etcd 3.5 writes a stream error so), blank lines and CRLF', () => {
    expect(decodeAll([Buffer.from('\n{"a":1}\r\n\n  \n{"b":2}')])).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('does not keep a reference to the caller’s chunk', () => {
    const d = new NdjsonDecoder({ maxLineBytes: 100 });
    const chunk = Buffer.from('{"a":');
    d.push(chunk);
    chunk.fill(0x20);
    expect(d.push(Buffer.from('1}\n'))).toEqual([{ a: 1 }]);
  });

  it('refuses a line over the limit, before it is whole', () => {
    const d = new NdjsonDecoder({ maxLineBytes: 10 });
    d.push(Buffer.from('{"aaaa":'));
    expect(() => d.push(Buffer.from('"bbbb"'))).toThrow(EtcdProtocolError);
  });

  it('refuses a line that is not JSON', () => {
    expect(() => decodeAll([Buffer.from('<html>\n')])).toThrow(/not JSON: <html>/);
  });
});
