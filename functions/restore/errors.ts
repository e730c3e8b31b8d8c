/**
 * A restore that cannot go on as it is. `retry` says whether the same step can succeed later (the
 * store or the master did not answer) or needs a change first (the backup is not there, its bytes
 * are wrong); `reason` is the CamelCase word for status and Events, `message` says what to do.
 */
export class RestoreError extends Error {
  override readonly name = 'RestoreError';
  readonly reason: string;
  readonly retry: boolean;

  constructor(reason: string, message: string, retry: boolean, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.retry = retry;
  }
}

export type Failure = { reason: string; message: string; retry: boolean };

/**
 * Any error as a failure: typed errors (RestoreError, StoreError, IntegrityError,
 * ConfigurationError, FeedError, the runtime's) carry their reason and whether to retry; anything
 * else — an API call that failed, a dropped connection — may pass, and is retried.
 */
export const failureOf = (error: unknown): Failure => {
  const e = error as { reason?: unknown; retry?: unknown; message?: unknown } | undefined;
  return {
    reason: typeof e?.reason === 'string' ? e.reason : 'Error',
    message: (typeof e?.message === 'string' && e.message ? e.message : String(error)).slice(0, 2000),
    retry: e?.retry !== false,
  };
};
