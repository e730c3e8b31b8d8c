/**
 * Every error the webhook answers with: a code (stable, for programs) and its HTTP status. The
 * body is always `{"error":{"code","message"}}`; the message says what was wrong and what to do.
 */
export const ERROR_STATUS = {
  // 400: the request itself is wrong
  MalformedJson: 400,
  InvalidBody: 400,
  InvalidPath: 400,
  UnsupportedContentType: 400,
  InvalidCloudEvent: 400,
  WrongEventType: 400,
  // 401: not signed, or not signed right (or the namespace accepts no webhooks)
  MissingSignature: 401,
  MalformedSignature: 401,
  StaleTimestamp: 401,
  BadSignature: 401,
  WebhookNotConfigured: 401,
  WebhookSecretInvalid: 401,
  // 404
  NotFound: 404,
  NamespaceNotServed: 404,
  ClusterNotFound: 404,
  BackupNotFound: 404,
  NoCompletedBackup: 404,
  RestoreNotFound: 404,
  // 409: the request is fine, the state is not
  RestoreInProgress: 409,
  BackupNotCompleted: 409,
  BackupDeleting: 409,
  WrongClusterKind: 409,
  ClusterDeleting: 409,
  NoBackupStore: 409,
  WebhookIdReused: 409,
  // 413, 429
  BodyTooLarge: 413,
  RateLimited: 429,
  // 5xx: ours; retry later
  Unavailable: 503,
  Internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
/** Every error code, for the OpenAPI document. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

/** Thrown anywhere in a request; the app turns it into the JSON error response. */
export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  /** Whether the same request may succeed later by itself (429, 503, a restore or backup still running). */
  readonly retry: boolean;
  /** Seconds for Retry-After (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, o: { retryAfter?: number; cause?: unknown } = {}) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.retry =
      this.status === 429 ||
      this.status === 503 ||
      code === 'RestoreInProgress' ||
      code === 'BackupNotCompleted';
    this.retryAfter = o.retryAfter;
  }
}

export const errorBody = (code: ErrorCode, message: string) => ({ error: { code, message } });

/** A body that ended before it was complete: the sender closed the connection (400, not ours). */
export const incompleteBody = (cause: unknown) =>
  new WebhookError('InvalidBody', 'the body ended before it was complete (the connection closed)', { cause });
