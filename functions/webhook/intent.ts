import { createHash } from 'node:crypto';
import { z } from 'zod';
import { zRestoreSpec } from '../../shared/api/generated.ts';
import { WebhookError } from './errors.ts';

/** An object name as the CRDs accept it (one rule: the generated schema's). */
export const zObjectName = zRestoreSpec.shape.cluster.shape.name;

/** `POST …/restore` bodies: exactly one of a Backup's name or the latest Completed Backup. */
export const zRestoreRequest = z.union([
  z.strictObject({ backup: zObjectName }),
  z.strictObject({ latest: z.literal(true) }),
]);
/** `POST …/backup` bodies: nothing to choose (the cluster's store and defaults apply). */
export const zBackupRequest = z.strictObject({});

/** What a verified request asks for, whichever way it came (plain JSON or a CloudEvent). */
export type Intent =
  | {
      readonly kind: 'Restore';
      readonly namespace: string;
      readonly cluster: string;
      readonly source: { readonly backup: { readonly name: string } } | { readonly latest: true };
    }
  | { readonly kind: 'Backup'; readonly namespace: string; readonly cluster: string };

const problems = (e: z.ZodError) =>
  e.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');

export const restoreIntent = (namespace: string, cluster: string, data: unknown): Intent => {
  const body = zRestoreRequest.safeParse(data);
  if (!body.success)
    throw new WebhookError(
      'InvalidBody',
      `the body must be {"backup":"<name of a Backup>"} or {"latest":true}${data === undefined ? '' : ` (${problems(body.error)})`}`,
    );
  const source = 'backup' in body.data ? { backup: { name: body.data.backup } } : { latest: true as const };
  return { kind: 'Restore', namespace, cluster, source };
};

export const backupIntent = (namespace: string, cluster: string, data: unknown): Intent => {
  const body = zBackupRequest.safeParse(data === undefined ? {} : data);
  if (!body.success)
    throw new WebhookError(
      'InvalidBody',
      `the body must be {} (the cluster's spec.backup decides the rest): ${problems(body.error)}`,
    );
  return { kind: 'Backup', namespace, cluster };
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The name of the object a webhook-id makes, the same on every replica and after every restart:
 * a repeated id finds the object its first delivery made (the API server refuses a second one
 * with that name). Kinds share the name, so an id is checked against both.
 */
export const objectNameOf = (namespace: string, webhookId: string) =>
  `webhook-${sha256(`${namespace}/${webhookId}`).slice(0, 20)}`;

/** What a request asked, independent of its encoding: a repeated id must ask the same. */
export const fingerprintOf = (i: Intent) =>
  sha256(JSON.stringify([i.kind, i.namespace, i.cluster, i.kind === 'Restore' ? i.source : null]));
