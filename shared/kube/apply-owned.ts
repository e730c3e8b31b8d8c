import type { KubeConfig } from '@kubernetes/client-node';
import { type Applyable, serverSideApply } from './apply.ts';
import { statusOf } from './errors.ts';
import { assertOwnedOrAbsent, OwnershipConflict } from './ownership.ts';

/** Why owned objects could not be made to match the spec; a person has to act. */
export type Refusal = { reason: string; message: string };

/** The API server refused an object as invalid (400, 422): a retry would not pass. */
export class Refused extends Error {
  override readonly name = 'Refused';
  readonly retry = false;
}

const kindName = (o: Applyable) => `${o.kind} ${o.metadata?.name}`;

/** Server-side apply; 400 and 422 (the object is invalid) become Refused with the API server's message. */
export const applyOrRefuse = async <T extends Applyable>(
  apply: <U extends Applyable>(obj: U) => Promise<U>,
  obj: T,
): Promise<T> => {
  try {
    return await apply(obj);
  } catch (error) {
    const code = statusOf(error);
    if (code === 400 || code === 422) {
      const body = (error as { body?: unknown }).body;
      let message = String((error as Error).message ?? error);
      try {
        const parsed = typeof body === 'string' ? JSON.parse(body) : body;
        if (parsed && typeof parsed === 'object' && 'message' in parsed) message = String(parsed.message);
      } catch {}
      throw new Refused(`the API server refused ${kindName(obj)}: ${message}`);
    }
    throw error;
  }
};

/**
 * Applies objects a custom resource owns, but only those absent or already its own (controller
 * reference to `ownerUid`): every name is checked before anything is written, so a conflict
 * changes nothing. Returns the refusal (a namesake of someone else's, or the API server's
 * message) instead of retrying it silently.
 */
export const applyOwnedObjects = async (o: {
  kube: KubeConfig;
  fieldManager: string;
  ownerUid: string;
  objects: readonly Applyable[];
  fence: () => void;
}): Promise<Refusal | undefined> => {
  const apply = serverSideApply(o.kube, o.fieldManager);
  try {
    for (const obj of o.objects) await assertOwnedOrAbsent(o.kube, obj, o.ownerUid);
    for (const obj of o.objects) {
      o.fence();
      await applyOrRefuse(apply, obj);
    }
    return undefined;
  } catch (error) {
    if (error instanceof OwnershipConflict) return { reason: error.reason, message: error.message };
    if (error instanceof Refused) return { reason: 'Rejected', message: error.message };
    throw error;
  }
};
