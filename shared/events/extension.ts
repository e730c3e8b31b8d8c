import type { CloudEvent } from 'cloudevents';

/** A CloudEvent extension attribute (kind, namespace, name, cluster…), undefined unless a non-empty string. */
export const extension = (event: CloudEvent<unknown>, name: string): string | undefined => {
  const v = (event as unknown as Record<string, unknown>)[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
};
