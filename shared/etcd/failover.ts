import { EtcdConnectionError, EtcdError } from './errors.ts';

/** Endpoints in the order to try them: the last one that answered first, then the rest in order. */
export const endpointOrder = (endpoints: readonly string[], preferred: number): string[] => {
  const start = preferred >= 0 && preferred < endpoints.length ? preferred : 0;
  return [...endpoints.slice(start), ...endpoints.slice(0, start)];
};

/**
 * Whether to send the call to the next endpoint after this error. A read goes on after anything
 * that another member might not have (a dead or partitioned member, one without a leader, a
 * learner). A write goes on only when it surely never reached etcd: otherwise it may have been
 * applied, and sending it again is the caller's decision (its error says `retry`).
 */
export const shouldFailOver = (error: unknown, idempotent: boolean): boolean => {
  if (error instanceof EtcdConnectionError) return idempotent || error.notSent;
  return idempotent && error instanceof EtcdError && error.retry;
};
