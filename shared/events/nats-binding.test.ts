import { headers } from '@nats-io/nats-core';
import { CloudEvent } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { fromMessage, InvalidEventError, STRUCTURED_CONTENT_TYPE, toBinaryMessage } from './nats-binding.ts';
import { percentDecode, percentEncode } from './percent.ts';

const event = () =>
  new CloudEvent({
    id: 'abc-1',
    source: '/tideway/cluster/7f3a',
    type: 'dev.tideway.resource.updated',
    subject: 'namespaces/default/redisclusters/cache',
    time: '2026-11-22T10:00:00.000Z',
    datacontenttype: 'application/json',
    kind: 'RedisCluster',
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    data: { generation: 3, note: 'ünïcode "quoted" 100%' },
  });

describe('percent encoding (HTTP binding 3.1.3.2)', () => {
  it('encodes space, quote, percent and non-ASCII as UTF-8 bytes, and decodes back', () => {
    expect(percentEncode('a b"c%d€')).toBe('a%20b%22c%25d%E2%82%AC');
    expect(percentDecode('a%20b%22c%25d%E2%82%AC')).toBe('a b"c%d€');
  });
});

describe('CloudEvents NATS binding', () => {
  it('writes binary mode: ce- headers, content-type, data as payload', () => {
    const { headers: h, data } = toBinaryMessage(event());
    expect(h.get('ce-id')).toBe('abc-1');
    expect(h.get('ce-specversion')).toBe('1.0');
    expect(h.get('ce-type')).toBe('dev.tideway.resource.updated');
    expect(h.get('ce-kind')).toBe('RedisCluster');
    expect(h.get('content-type')).toBe('application/json');
    expect(h.get('ce-datacontenttype')).toBe('');
    expect(JSON.parse(new TextDecoder().decode(data))).toEqual(event().data);
  });

  it('round-trips binary mode into an event the SDK validates', () => {
    const { headers: h, data } = toBinaryMessage(event());
    const back = fromMessage(h, data);
    expect(back.validate()).toBe(true);
    expect(back.toJSON()).toEqual(event().toJSON());
  });

  it('reads structured mode', () => {
    const h = headers();
    h.set('content-type', STRUCTURED_CONTENT_TYPE);
    const back = fromMessage(h, new TextEncoder().encode(JSON.stringify(event().toJSON())));
    expect(back.toJSON()).toEqual(event().toJSON());
  });

  it('refuses a message that is not a valid CloudEvent with a non-retryable error', () => {
    const h = headers();
    h.set('ce-id', 'x');
    const error = (() => {
      try {
        fromMessage(h, new Uint8Array());
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidEventError);
    expect((error as InvalidEventError).retry).toBe(false);
  });
});
