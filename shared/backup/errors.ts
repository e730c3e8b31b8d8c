/**
 * A backup store refused or failed a request. `retry` says whether the same request can succeed
 * later (the store was unreachable, overloaded, timed out) or needs a change by the user first
 * (the bucket does not exist, the credentials are wrong); `reason` is the CamelCase word for
 * status and Events, `message` says what to fix.
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  readonly reason: string;
  readonly retry: boolean;

  constructor(reason: string, message: string, retry: boolean, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.retry = retry;
  }
}

/** The backup's own bytes are wrong: checksum, authentication or format. Never retried. */
export class IntegrityError extends Error {
  override readonly name = 'IntegrityError';
  readonly retry = false;
  readonly reason: string;

  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** The store or the encryption key is configured wrongly (a Secret missing or malformed). */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
  readonly retry = false;
  readonly reason: string;

  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}
