import { type MsgHdrs, headers as natsHeaders } from '@nats-io/nats-core';
import { CloudEvent } from 'cloudevents';
import { percentDecode, percentEncode } from './percent.ts';

/**
 * CloudEvents over NATS. Binary mode (what we publish): attributes as `ce-<name>` headers with
 * percent-encoded values, datacontenttype as `content-type`, data as the payload. Structured mode
 * (accepted on input): `content-type: application/cloudevents+json`, the JSON event format as the
 * payload. Parsed events are validated by the cloudevents SDK.
 */
export const STRUCTURED_CONTENT_TYPE = 'application/cloudevents+json';
const PREFIX = 'ce-';
const CONTENT_TYPE = 'content-type';

/** A message that is not a valid CloudEvent: never retry it, it will not become valid. */
export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
  readonly retry = false;
}

export type NatsMessageParts = { headers: MsgHdrs; data: Uint8Array };

const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^application\/([\w.+-]+\+)?json\b/.test(contentType);

export const toBinaryMessage = (event: CloudEvent<unknown>): NatsMessageParts => {
  const h = natsHeaders();
  for (const [key, value] of Object.entries(event.toJSON())) {
    if (key === 'data' || key === 'data_base64' || value === undefined || value === null) continue;
    if (key === 'datacontenttype') h.set(CONTENT_TYPE, String(value));
    else h.set(`${PREFIX}${key}`, percentEncode(String(value)));
  }
  const data = event.data;
  const payload =
    data === undefined
      ? new Uint8Array()
      : data instanceof Uint8Array
        ? data
        : new TextEncoder().encode(
            typeof data === 'string' && !isJson(event.datacontenttype) ? data : JSON.stringify(data),
          );
  return { headers: h, data: payload };
};

const headerEntries = (h: MsgHdrs | undefined): [string, string][] =>
  h ? [...h.keys()].map((k) => [k.toLowerCase(), h.get(k)]) : [];

export const fromMessage = (h: MsgHdrs | undefined, data: Uint8Array): CloudEvent<unknown> => {
  const entries = headerEntries(h);
  const contentType = entries.find(([k]) => k === CONTENT_TYPE)?.[1];
  try {
    if (contentType?.startsWith(STRUCTURED_CONTENT_TYPE)) {
      const parsed = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>;
      return new CloudEvent(parsed, true);
    }
    const attrs: Record<string, unknown> = {};
    for (const [k, v] of entries) {
      if (k.startsWith(PREFIX)) attrs[k.slice(PREFIX.length)] = percentDecode(v);
    }
    if (contentType) attrs.datacontenttype = contentType;
    if (data.length > 0) {
      const text = new TextDecoder().decode(data);
      attrs.data = isJson(contentType) ? JSON.parse(text) : contentType?.startsWith('text/') ? text : data;
    }
    return new CloudEvent(attrs, true);
  } catch (error) {
    throw new InvalidEventError(
      `not a valid CloudEvent: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
};
