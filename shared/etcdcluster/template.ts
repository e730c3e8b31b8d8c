import { createHash } from 'node:crypto';
import type { EtcdCluster } from '../api/generated.ts';
import { imageOf } from './names.ts';

/** On each member pod: what it was made from (image, resources), to see a spec change it lacks. */
export const TEMPLATE_ANNOTATION = 'tideway.dev/pod-template';

/** Canonical JSON: objects with sorted keys, so the same resources always hash alike. */
const canonical = (v: unknown): string =>
  v && typeof v === 'object' && !Array.isArray(v)
    ? `{${Object.keys(v)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
        .join(',')}}`
    : JSON.stringify(v ?? null);

/**
 * The members' pod template as the spec makes it: a member whose pod was made from another one is
 * restarted on its volume, one at a time like an upgrade. Taken from the spec, never from the live
 * pod (the API server rewrites quantities: `1000m` reads back as `1`), so it never sees a change
 * that is not there.
 */
export const podTemplateOf = (c: Pick<EtcdCluster, 'spec'>): string =>
  createHash('sha256')
    .update(canonical({ image: imageOf(c), resources: c.spec.resources ?? {} }))
    .digest('hex')
    .slice(0, 16);
