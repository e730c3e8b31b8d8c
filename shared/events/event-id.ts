import { createHash } from 'node:crypto';

/**
 * Deterministic event ids: the same change always gets the same id, so a republish after a
 * watcher crash or relist is dropped by JetStream's duplicate window (Nats-Msg-Id = event id).
 */
export const eventId = (...parts: readonly (string | number | undefined)[]): string =>
  createHash('sha256')
    .update(parts.map((p) => String(p ?? '')).join('\u0000'))
    .digest('base64url')
    .slice(0, 32);
