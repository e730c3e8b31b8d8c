/** A failure as the Backup's status shows it, and whether another attempt can help. */
export type AttemptFailure = { reason: string; message: string; retry: boolean };

/**
 * Any error of an attempt: typed errors (StoreError, SnapshotError, ConfigurationError,
 * IntegrityError, the runtime's) carry their reason and whether to retry; anything else — an API
 * call that failed, a bug — is retried, with its message.
 */
export const failureOf = (error: unknown): AttemptFailure => {
  const e = error as { reason?: unknown; retry?: unknown; message?: unknown } | undefined;
  return {
    reason: typeof e?.reason === 'string' ? e.reason : 'Error',
    message: typeof e?.message === 'string' && e.message ? e.message : String(error),
    retry: e?.retry !== false,
  };
};
