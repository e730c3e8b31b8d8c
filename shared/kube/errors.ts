/** HTTP status of an error thrown by @kubernetes/client-node (ApiException has `code`). */
export const statusOf = (error: unknown): number | undefined => {
  const e = error as { code?: unknown; statusCode?: unknown; response?: { statusCode?: unknown } };
  for (const v of [e?.code, e?.statusCode, e?.response?.statusCode]) if (typeof v === 'number') return v;
  return undefined;
};

export const isNotFound = (error: unknown) => statusOf(error) === 404;
export const isConflict = (error: unknown) => statusOf(error) === 409;
export const isAlreadyExists = (error: unknown) => statusOf(error) === 409;

/** 5xx, 429 and network errors are worth retrying; 4xx other than 409/429 are not. */
export const isRetryableApiError = (error: unknown): boolean => {
  const s = statusOf(error);
  return s === undefined || s === 409 || s === 429 || s >= 500;
};
