import { type ObjectRef, TYPE_PREFIX } from './types.ts';

/** The one JetStream stream every Tideway event goes through. */
export const STREAM = 'TIDEWAY';
export const SUBJECT_ROOT = 'tideway';

/**
 * NATS tokens are separated by dots and Kubernetes names may contain dots: escape them (and the
 * wildcard characters, which names cannot contain but a bad input might) so one name is one token.
 */
export const encodeToken = (value: string): string =>
  value.replace(/[%.*> ]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

export const decodeToken = (token: string): string => decodeURIComponent(token);

/** `dev.tideway.resource.updated` → `resource.updated` (always two tokens). */
const typeTokens = (type: string): string => {
  if (!type.startsWith(TYPE_PREFIX))
    throw new Error(`event type ${type} is not a Tideway type (${TYPE_PREFIX}…)`);
  return type.slice(TYPE_PREFIX.length);
};

/** The object key of a subject: what per-object serialization locks on. */
export const objectKeyOf = (ref: ObjectRef): string =>
  [ref.kind, ref.namespace, ref.name].map(encodeToken).join('.');

/**
 * Every event of one object lands in one of this many partitions, a function's replicas share
 * the partitions out (runtime/partitions.ts), so an object's events keep going to one replica.
 * 12 splits evenly over 1, 2, 3, 4 and 6 replicas. Changing it re-routes every object.
 */
export const PARTITIONS = 12;

/** The partition of an object's events: FNV-1a of its key (stable across versions and languages). */
export const partitionOf = (ref: ObjectRef): number => {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(objectKeyOf(ref), 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % PARTITIONS;
};

/** tideway.<type: 2 tokens>.<kind>.<namespace>.<name>.<partition> */
export const subjectFor = (type: string, ref: ObjectRef): string =>
  [
    SUBJECT_ROOT,
    typeTokens(type),
    encodeToken(ref.kind),
    encodeToken(ref.namespace),
    encodeToken(ref.name),
    String(partitionOf(ref)),
  ].join('.');

/**
 * Filter subject for a subscription: a type pattern as in serverless.yml (`dev.tideway.resource.*`
 * or an exact type), optionally one kind, one namespace and one partition.
 */
export const filterSubject = (
  typePattern: string,
  kind?: string,
  namespace?: string,
  partition?: number,
): string => {
  const tokens = typeTokens(typePattern);
  if (tokens.split('.').length !== 2)
    throw new Error(`event type pattern ${typePattern} must have the form ${TYPE_PREFIX}<group>.<name|*>`);
  const ns = namespace ? encodeToken(namespace) : undefined;
  // Without a partition `>` also covers name and partition; with one, the name is a wildcard.
  const rest = partition === undefined ? [...(ns ? [ns] : []), '>'] : [ns ?? '*', '*', String(partition)];
  return [SUBJECT_ROOT, tokens, kind ? encodeToken(kind) : '*', ...rest].join('.');
};
