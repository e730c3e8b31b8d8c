import { rfc3339 } from './time.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export type Condition = {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
};

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * Sets one condition, keeping the others. lastTransitionTime changes only when the status does,
 * so it tells when the state began, not when someone last looked.
 */
export const setCondition = (
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  observedGeneration: number | undefined,
  now: Date = new Date(),
): Condition[] => {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === input.type);
  const previous = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    ...input,
    lastTransitionTime:
      previous && previous.status === input.status ? previous.lastTransitionTime : rfc3339(now),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
};

export const findCondition = (conditions: readonly Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

export const isTrue = (conditions: readonly Condition[] | undefined, type: string) =>
  findCondition(conditions, type)?.status === 'True';
