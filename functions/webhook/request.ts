import { z } from 'zod';
import { percentDecode } from '../../shared/events/percent.ts';
import { WebhookError } from './errors.ts';

/** The CloudEvent types the endpoints accept, one per endpoint. */
export const REQUEST_TYPES = {
  Restore: 'dev.tideway.restore.requested',
  Backup: 'dev.tideway.backup.requested',
} as const;
export type RequestType = (typeof REQUEST_TYPES)[keyof typeof REQUEST_TYPES];

export const STRUCTURED = 'application/cloudevents+json';
const BATCH = 'application/cloudevents-batch+json';

/** Who sent a CloudEvent, as its attributes say (recorded on the object made from it). */
export type CloudEventMeta = {
  readonly mode: 'binary' | 'structured';
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly subject?: string;
};

export type ParsedRequest = {
  /** The JSON body, or a CloudEvent's data; undefined when there is none. */
  readonly data: unknown;
  readonly cloudEvent?: CloudEventMeta;
};

const zAttributes = z.object({
  specversion: z.literal('1.0', 'specversion must be "1.0"'),
  id: z.string().min(1).max(256),
  source: z.string().min(1).max(1024),
  type: z.string().min(1).max(256),
  subject: z.string().max(1024).optional(),
  datacontenttype: z.string().max(256).optional(),
});

const mediaType = (contentType: string | null | undefined) =>
  contentType?.split(';')[0]?.trim().toLowerCase() || undefined;
const isJson = (contentType: string | undefined) =>
  contentType === undefined ||
  contentType === 'application/json' ||
  /^application\/[\w.-]+\+json$/.test(contentType);

const problems = (e: z.ZodError) =>
  e.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

const decodeJson = (body: Uint8Array, what: string): unknown => {
  if (body.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new WebhookError('MalformedJson', `${what} is not valid UTF-8`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new WebhookError('MalformedJson', `${what} is not valid JSON: ${(error as Error).message}`);
  }
};

const attributes = (raw: Record<string, unknown>, expected: RequestType, mode: CloudEventMeta['mode']) => {
  const a = zAttributes.safeParse(raw);
  if (!a.success) throw new WebhookError('InvalidCloudEvent', `not a valid CloudEvent: ${problems(a.error)}`);
  if (a.data.type !== expected)
    throw new WebhookError(
      'WrongEventType',
      `this endpoint takes CloudEvents of type ${expected}, not ${a.data.type}`,
    );
  if (!isJson(mediaType(a.data.datacontenttype)))
    throw new WebhookError('UnsupportedContentType', 'the CloudEvent data must be JSON (application/json)');
  const meta: CloudEventMeta = {
    mode,
    id: a.data.id,
    source: a.data.source,
    type: a.data.type,
    ...(a.data.subject === undefined ? {} : { subject: a.data.subject }),
  };
  return meta;
};

/**
 * The request's data: a plain JSON body, or a CloudEvent (HTTP binding) of the endpoint's type in
 * binary mode (`ce-*` headers, data as the body) or structured mode (`application/cloudevents+json`).
 * Runs after the signature check: the signature covers the raw body whatever its mode.
 */
export const parseRequest = (headers: Headers, body: Uint8Array, expected: RequestType): ParsedRequest => {
  const encoding = headers.get('content-encoding')?.trim().toLowerCase();
  if (encoding && encoding !== 'identity')
    throw new WebhookError(
      'UnsupportedContentType',
      `content-encoding ${encoding.slice(0, 40)} is not accepted: send the JSON body uncompressed (it is a few hundred bytes)`,
    );
  const contentType = mediaType(headers.get('content-type'));
  if (contentType === BATCH)
    throw new WebhookError(
      'UnsupportedContentType',
      'batched CloudEvents are not accepted; send one event per request',
    );
  if (contentType === STRUCTURED) {
    const event = decodeJson(body, 'the CloudEvent');
    if (typeof event !== 'object' || event === null || Array.isArray(event))
      throw new WebhookError('InvalidCloudEvent', 'a structured CloudEvent must be a JSON object');
    const e = event as Record<string, unknown>;
    if ('data_base64' in e)
      throw new WebhookError(
        'InvalidCloudEvent',
        'data_base64 is not accepted; send the data as JSON in "data"',
      );
    return { data: e.data, cloudEvent: attributes(e, expected, 'structured') };
  }
  if (!isJson(contentType))
    throw new WebhookError(
      'UnsupportedContentType',
      `content-type ${contentType} is not accepted; send application/json (or a CloudEvent)`,
    );
  if (headers.has('ce-specversion')) {
    const raw: Record<string, unknown> = {};
    for (const [k, v] of headers) if (k.startsWith('ce-')) raw[k.slice(3)] = percentDecode(v);
    if (contentType) raw.datacontenttype = contentType;
    return { data: decodeJson(body, 'the CloudEvent data'), cloudEvent: attributes(raw, expected, 'binary') };
  }
  return { data: decodeJson(body, 'the body') };
};
