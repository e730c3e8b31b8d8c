import { WebhookError } from './errors.ts';
import { SECRET_KEY, SECRET_NAME, type WebhookKube } from './kube.ts';
import { parseSecret } from './signature.ts';

export type SecretKeys = {
  /**
   * The namespace's signing key. Throws 401 when the namespace accepts no webhooks (no Secret, or
   * one that is not a whsec_ secret): fail closed.
   */
  key(namespace: string, nowMs: number): Promise<Buffer>;
  /**
   * The key read again, if the cached one is older than a second: a secret rotated a moment ago
   * verifies at once. Undefined when it was just read (a flood of bad signatures reads nothing).
   */
  refresh(namespace: string, nowMs: number): Promise<Buffer | undefined>;
};

/**
 * Keys cached per namespace for `ttlMs` (a missing Secret too, so unsigned floods at a namespace
 * without one do not reach the API server), in a map bounded by `maxNamespaces`. The key lives
 * only here, in memory: never logged, never in a response.
 */
export const secretKeys = (
  kube: WebhookKube,
  o: { ttlMs?: number; maxNamespaces?: number } = {},
): SecretKeys => {
  const ttl = o.ttlMs ?? 5000;
  const max = o.maxNamespaces ?? 1000;
  /** `read`: in which order the read began; a read that began later is never replaced by one before. */
  const cache = new Map<string, { key: Buffer | 'missing' | 'invalid'; at: number; read: number }>();
  let reads = 0;
  // One read per namespace at a time: requests that miss together wait for the same answer.
  const reading = new Map<string, Promise<Buffer | 'missing' | 'invalid'>>();
  const read = async (namespace: string, now: number) => {
    const mine = ++reads;
    const value = await kube.webhookSecret(namespace);
    const key = value === undefined ? 'missing' : (parseSecret(value) ?? 'invalid');
    // One begun before a rotation and answered after a fresher read must not bring the old key back.
    if ((cache.get(namespace)?.read ?? 0) > mine) return key;
    cache.delete(namespace);
    cache.set(namespace, { key, at: now, read: mine });
    if (cache.size > max) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    return key;
  };
  const load = (namespace: string, now: number) => {
    const pending = reading.get(namespace);
    if (pending) return pending;
    const next = read(namespace, now).finally(() => reading.delete(namespace));
    reading.set(namespace, next);
    return next;
  };
  const usable = (namespace: string, key: Buffer | 'missing' | 'invalid') => {
    if (key === 'missing')
      throw new WebhookError(
        'WebhookNotConfigured',
        `namespace ${namespace} accepts no webhooks: it has no Secret ${SECRET_NAME} with key ${SECRET_KEY}`,
      );
    if (key === 'invalid')
      throw new WebhookError(
        'WebhookSecretInvalid',
        `namespace ${namespace} accepts no webhooks: its Secret ${SECRET_NAME} key ${SECRET_KEY} is not a whsec_<base64> secret of 24 to 64 bytes`,
      );
    return key;
  };
  return {
    key: async (namespace, now) => {
      const hit = cache.get(namespace);
      return usable(namespace, hit && now - hit.at < ttl ? hit.key : await load(namespace, now));
    },
    refresh: async (namespace, now) => {
      const hit = cache.get(namespace);
      if (hit && now - hit.at < 1000) return undefined;
      // A read of its own: one already under way may have begun before a rotation.
      const key = await read(namespace, now);
      return key instanceof Buffer ? key : undefined;
    },
  };
};
