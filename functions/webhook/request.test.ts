import { CloudEvent, HTTP } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { WebhookError } from './errors.ts';
import { backupIntent, fingerprintOf, objectNameOf, restoreIntent } from './intent.ts';
import { parseRequest, REQUEST_TYPES } from './request.ts';

const bytes = (s: string) => new TextEncoder().encode(s);
const codeOf = (f: () => unknown) => {
  try {
    f();
    return 'ok';
  } catch (error) {
    if (error instanceof WebhookError) return error.code;
    throw error;
  }
};
/** A message as the CloudEvents SDK's HTTP emitter writes it: the reference for both modes. */
const sdk = (mode: 'binary' | 'structured', attrs: Record<string, unknown>) => {
  const m = HTTP[mode](new CloudEvent({ source: '/ci/42', id: 'ev-1', ...attrs }));
  return { headers: new Headers(m.headers as Record<string, string>), body: bytes(String(m.body ?? '')) };
};

describe('parseRequest', () => {
  it('reads a plain JSON body', () => {
    const h = new Headers({ 'content-type': 'application/json; charset=utf-8' });
    expect(parseRequest(h, bytes('{"latest":true}'), REQUEST_TYPES.Restore)).toEqual({
      data: { latest: true },
    });
    expect(parseRequest(new Headers(), bytes('{}'), REQUEST_TYPES.Backup)).toEqual({ data: {} });
    expect(parseRequest(new Headers(), bytes(''), REQUEST_TYPES.Backup)).toEqual({ data: undefined });
  });

  it('refuses a compressed body by its encoding, not as malformed JSON', () => {
    for (const encoding of ['gzip', 'br', 'deflate, gzip']) {
      const h = new Headers({ 'content-type': 'application/json', 'content-encoding': encoding });
      expect(
        codeOf(() => parseRequest(h, bytes('\x1f\x8b'), REQUEST_TYPES.Backup)),
        encoding,
      ).toBe('UnsupportedContentType');
    }
    const plain = new Headers({ 'content-type': 'application/json', 'content-encoding': 'identity' });
    expect(parseRequest(plain, bytes('{}'), REQUEST_TYPES.Backup)).toEqual({ data: {} });
  });

  it('reads CloudEvents the SDK writes, in binary and structured mode', () => {
    for (const mode of ['binary', 'structured'] as const) {
      const m = sdk(mode, {
        type: REQUEST_TYPES.Restore,
        subject: 'cache',
        data: { backup: 'nightly' },
      });
      expect(parseRequest(m.headers, m.body, REQUEST_TYPES.Restore), mode).toEqual({
        data: { backup: 'nightly' },
        cloudEvent: { mode, id: 'ev-1', source: '/ci/42', type: REQUEST_TYPES.Restore, subject: 'cache' },
      });
    }
  });

  it('percent-decodes binary-mode attributes, as the HTTP binding encodes them', () => {
    const h = new Headers({
      'ce-specversion': '1.0',
      'ce-id': 'ev-2',
      'ce-source': '/ci/caf%C3%A9%20bar',
      'ce-type': REQUEST_TYPES.Backup,
      'content-type': 'application/json',
    });
    expect(parseRequest(h, bytes('{}'), REQUEST_TYPES.Backup).cloudEvent?.source).toBe('/ci/café bar');
  });

  it('refuses an event of another type, whatever the mode', () => {
    for (const mode of ['binary', 'structured'] as const) {
      const m = sdk(mode, { type: REQUEST_TYPES.Backup, data: {} });
      expect(
        codeOf(() => parseRequest(m.headers, m.body, REQUEST_TYPES.Restore)),
        mode,
      ).toBe('WrongEventType');
    }
  });

  it('refuses what is not JSON, or not a valid event', () => {
    const json = new Headers({ 'content-type': 'application/json' });
    const structured = new Headers({ 'content-type': 'application/cloudevents+json' });
    const cases: [string, Headers, string, string][] = [
      ['broken JSON', json, '{"latest":', 'MalformedJson'],
      ['not UTF-8', json, '\xff\xfe', 'MalformedJson'],
      [
        'form data',
        new Headers({ 'content-type': 'application/x-www-form-urlencoded' }),
        'a=b',
        'UnsupportedContentType',
      ],
      [
        'batch',
        new Headers({ 'content-type': 'application/cloudevents-batch+json' }),
        '[]',
        'UnsupportedContentType',
      ],
      ['structured, not an object', structured, '[1]', 'InvalidCloudEvent'],
      [
        'structured, no id',
        structured,
        '{"specversion":"1.0","source":"s","type":"dev.tideway.restore.requested"}',
        'InvalidCloudEvent',
      ],
      [
        'structured, version 0.3',
        structured,
        '{"specversion":"0.3","id":"1","source":"s","type":"dev.tideway.restore.requested"}',
        'InvalidCloudEvent',
      ],
      [
        'structured, data_base64',
        structured,
        '{"specversion":"1.0","id":"1","source":"s","type":"dev.tideway.restore.requested","data_base64":"e30="}',
        'InvalidCloudEvent',
      ],
      [
        'structured, XML data',
        structured,
        '{"specversion":"1.0","id":"1","source":"s","type":"dev.tideway.restore.requested","datacontenttype":"application/xml","data":"<a/>"}',
        'UnsupportedContentType',
      ],
      [
        'binary, no source',
        new Headers({ 'ce-specversion': '1.0', 'ce-id': '1', 'ce-type': REQUEST_TYPES.Restore }),
        '{}',
        'InvalidCloudEvent',
      ],
    ];
    for (const [what, h, body, code] of cases) {
      const raw = what === 'not UTF-8' ? new Uint8Array([0xff, 0xfe]) : bytes(body);
      expect(
        codeOf(() => parseRequest(h, raw, REQUEST_TYPES.Restore)),
        what,
      ).toBe(code);
    }
  });
});

describe('intents', () => {
  it('take exactly one of backup or latest for a restore', () => {
    expect(restoreIntent('ns', 'c', { backup: 'nightly' })).toEqual({
      kind: 'Restore',
      namespace: 'ns',
      cluster: 'c',
      source: { backup: { name: 'nightly' } },
    });
    expect(restoreIntent('ns', 'c', { latest: true })).toMatchObject({ source: { latest: true } });
    for (const bad of [
      undefined,
      {},
      { latest: false },
      { backup: 'a', latest: true },
      { backup: 'Bad_Name' },
      { backup: '' },
      [],
      'x',
      { s3: {} },
    ])
      expect(
        codeOf(() => restoreIntent('ns', 'c', bad)),
        JSON.stringify(bad),
      ).toBe('InvalidBody');
  });

  it('take {} (or nothing) for a backup', () => {
    expect(backupIntent('ns', 'c', {})).toEqual({ kind: 'Backup', namespace: 'ns', cluster: 'c' });
    expect(backupIntent('ns', 'c', undefined)).toEqual({ kind: 'Backup', namespace: 'ns', cluster: 'c' });
    for (const bad of [{ store: {} }, [], 'x', null])
      expect(
        codeOf(() => backupIntent('ns', 'c', bad)),
        JSON.stringify(bad),
      ).toBe('InvalidBody');
  });

  it('name objects by namespace and webhook-id only, and fingerprint what was asked', () => {
    const name = objectNameOf('ns', 'msg_1');
    expect(name).toMatch(/^webhook-[0-9a-f]{20}$/);
    expect(objectNameOf('ns', 'msg_1')).toBe(name);
    expect(objectNameOf('ns', 'msg_2')).not.toBe(name);
    expect(objectNameOf('other', 'msg_1')).not.toBe(name);
    const a = restoreIntent('ns', 'c', { latest: true });
    expect(fingerprintOf(a)).toBe(fingerprintOf(restoreIntent('ns', 'c', { latest: true })));
    expect(fingerprintOf(a)).not.toBe(fingerprintOf(restoreIntent('ns', 'd', { latest: true })));
    expect(fingerprintOf(a)).not.toBe(fingerprintOf(restoreIntent('ns', 'c', { backup: 'x' })));
    expect(fingerprintOf(a)).not.toBe(fingerprintOf(backupIntent('ns', 'c', {})));
  });
});
