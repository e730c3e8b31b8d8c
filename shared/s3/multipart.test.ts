import { describe, expect, it } from 'vitest';
import { type MultipartApi, multipartUpload } from './multipart.ts';

/** Records what a multipart upload asks of the store; fails where told. */
const recorder = (o: { failPart?: number; failComplete?: boolean; failAbort?: boolean } = {}) => {
  const calls: string[] = [];
  const parts = new Map<number, Buffer>();
  let inFlight = 0;
  let mostInFlight = 0;
  const api: MultipartApi = {
    create: async (key) => {
      calls.push(`create ${key}`);
      return 'u1';
    },
    uploadPart: async (_key, _id, n, body) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      if (n === o.failPart) throw new Error(`part ${n} failed`);
      parts.set(n, Buffer.from(body));
      calls.push(`part ${n} ${body.length}`);
      return { PartNumber: n, ETag: `etag-${n}` };
    },
    complete: async (_key, _id, list) => {
      if (o.failComplete) throw new Error('complete failed');
      calls.push(`complete ${list.map((p) => `${p.PartNumber}:${p.ETag}`).join(',')}`);
    },
    abort: async () => {
      calls.push('abort');
      if (o.failAbort) throw new Error('store unreachable');
    },
  };
  return { api, calls, parts, mostInFlight: () => mostInFlight };
};

const chunks = async function* (sizes: number[], fail?: Error) {
  let v = 0;
  for (const n of sizes) {
    yield Buffer.alloc(n, v++ % 256);
  }
  if (fail) throw fail;
};
const fixed = (n: number) => () => n;

describe('multipartUpload', () => {
  it('cuts the body into parts of the given sizes, the last one short, and completes them in order', async () => {
    const r = recorder();
    const body = chunks([7, 7, 7, 7, 3]); // 31 bytes
    const sizes = (i: number) => (i < 2 ? 10 : 6);
    const result = await multipartUpload(r.api, 'k', body, { partSize: sizes, contentType: 'x' });
    expect(result).toEqual({ size: 31, parts: 4 });
    expect([...r.parts.entries()].sort(([a], [b]) => a - b).map(([, b]) => b.length)).toEqual([10, 10, 6, 5]);
    const joined = Buffer.concat([...r.parts.entries()].sort(([a], [b]) => a - b).map(([, b]) => b));
    expect(joined.equals(Buffer.concat([0, 1, 2, 3, 4].map((v, i) => Buffer.alloc(i < 4 ? 7 : 3, v))))).toBe(
      true,
    );
    expect(r.calls.at(-1)).toBe('complete 1:etag-1,2:etag-2,3:etag-3,4:etag-4');
    expect(r.calls).not.toContain('abort');
  });

  it('uploads at most `concurrency` parts at once', async () => {
    const r = recorder();
    await multipartUpload(r.api, 'k', chunks(Array(50).fill(10)), {
      partSize: fixed(10),
      contentType: 'x',
      concurrency: 3,
    });
    expect(r.mostInFlight()).toBe(3);
  });

  it('aborts, and never completes, when the body fails midway', async () => {
    const r = recorder();
    const error = await multipartUpload(r.api, 'k', chunks([10, 10, 10], new Error('source lost')), {
      partSize: fixed(10),
      contentType: 'x',
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('source lost');
    expect(r.calls.at(-1)).toBe('abort');
    expect(r.calls.some((c) => c.startsWith('complete'))).toBe(false);
  });

  it('aborts when a part fails, and stops reading the body', async () => {
    const r = recorder({ failPart: 2 });
    let read = 0;
    const body = (async function* () {
      for (let i = 0; i < 100; i++) {
        read++;
        yield Buffer.alloc(10);
      }
    })();
    const error = await multipartUpload(r.api, 'k', body, { partSize: fixed(10), contentType: 'x' }).catch(
      (e: unknown) => e,
    );
    expect((error as Error).message).toBe('part 2 failed');
    expect(r.calls.at(-1)).toBe('abort');
    expect(read).toBeLessThan(10);
  });

  it('aborts when completing fails, and reports an abort that failed itself', async () => {
    const failed: unknown[] = [];
    const r = recorder({ failComplete: true, failAbort: true });
    const error = await multipartUpload(r.api, 'k', chunks([5]), {
      partSize: fixed(10),
      contentType: 'x',
      onAbortFailed: (e) => failed.push(e),
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('complete failed');
    expect(r.calls.at(-1)).toBe('abort');
    expect(failed).toHaveLength(1);
  });

  it('aborts when its signal aborts', async () => {
    const r = recorder();
    const ac = new AbortController();
    const body = (async function* () {
      yield Buffer.alloc(10);
      ac.abort(new Error('timed out'));
      yield Buffer.alloc(10);
    })();
    const error = await multipartUpload(r.api, 'k', body, {
      partSize: fixed(10),
      contentType: 'x',
      signal: ac.signal,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('timed out');
    expect(r.calls.at(-1)).toBe('abort');
  });
});
