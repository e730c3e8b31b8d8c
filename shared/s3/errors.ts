import { StoreError } from '../backup/errors.ts';

/** What an error names the request and the store by, so its message says what to fix. */
export type S3ErrorContext = { bucket: string; endpoint: string; credentials: string };

type SdkError = {
  name?: string;
  Code?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
};

/** Error codes of requests that fail the same way until the user changes something. */
const TERMINAL: Record<string, (c: S3ErrorContext) => [reason: string, message: string]> = {
  NoSuchBucket: (c) => [
    'BucketNotFound',
    `bucket ${c.bucket} does not exist at ${c.endpoint}: create it, or name an existing one in store.s3.bucket`,
  ],
  InvalidBucketName: (c) => ['BucketNotFound', `${c.bucket} is not a valid bucket name`],
  InvalidAccessKeyId: (c) => [
    'InvalidCredentials',
    `the S3 server does not know the access key in Secret ${c.credentials} (AWS_ACCESS_KEY_ID): fix the Secret`,
  ],
  // versitygw's word for an unknown access key.
  XAdminUserNotFound: (c) => [
    'InvalidCredentials',
    `the S3 server does not know the access key in Secret ${c.credentials} (AWS_ACCESS_KEY_ID): fix the Secret`,
  ],
  SignatureDoesNotMatch: (c) => [
    'InvalidCredentials',
    `the S3 server refused the signature: AWS_SECRET_ACCESS_KEY in Secret ${c.credentials} does not belong to its access key; fix the Secret`,
  ],
  InvalidToken: (c) => [
    'InvalidCredentials',
    `the S3 server refused the credentials in Secret ${c.credentials}`,
  ],
  ExpiredToken: (c) => ['InvalidCredentials', `the credentials in Secret ${c.credentials} have expired`],
  AccessDenied: (c) => [
    'AccessDenied',
    `the credentials in Secret ${c.credentials} may not do this in bucket ${c.bucket}: grant them Put/Get/DeleteObject and ListBucketMultipartUploads/AbortMultipartUpload`,
  ],
  AuthorizationHeaderMalformed: (c) => [
    'WrongRegion',
    `the S3 server refused the request's region: set store.s3.region to the bucket's region (${c.bucket})`,
  ],
  PermanentRedirect: (c) => [
    'WrongRegion',
    `bucket ${c.bucket} is in another region: set store.s3.region (and endpoint) to where it is`,
  ],
  NoSuchKey: () => ['ObjectNotFound', 'the backup object does not exist (deleted from the bucket?)'],
  NoSuchUpload: () => ['UploadGone', 'the multipart upload no longer exists (aborted by someone else?)'],
  EntityTooSmall: () => ['EntityTooSmall', 'a part of the upload was below the store’s minimum part size'],
  InvalidArgument: (c) => [
    'StoreRejected',
    `the S3 server at ${c.endpoint} refused an argument of the request`,
  ],
};

/** Network-level failures: the store may answer later. */
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'ThrottlingException',
]);

/**
 * Any error of an S3 request as a StoreError: terminal for what the user must fix (a missing
 * bucket, wrong credentials or region, a denied permission), retryable for what may pass (the
 * store unreachable, 5xx, throttling, timeouts). An unknown 4xx is terminal: asking again the same
 * way gets the same answer.
 */
export const classifyS3Error = (error: unknown, c: S3ErrorContext, what: string): StoreError => {
  if (error instanceof StoreError) return error;
  const e = (error ?? {}) as SdkError;
  const code = e.Code ?? (e.name && e.name !== 'Error' ? e.name : undefined) ?? e.code;
  const status = e.$metadata?.httpStatusCode;
  const terminal = code ? TERMINAL[code] : undefined;
  if (terminal) {
    const [reason, message] = terminal(c);
    return new StoreError(reason, `${what}: ${message}`, false, { cause: error });
  }
  const detail = `${code ?? 'error'}${status ? ` (HTTP ${status})` : ''}: ${e.message ?? String(error)}`;
  if (
    (code && NETWORK.has(code)) ||
    (e.code && NETWORK.has(e.code)) ||
    status === undefined ||
    status >= 500 ||
    status === 429
  )
    return new StoreError(
      'StoreUnavailable',
      `${what}: the S3 server at ${c.endpoint} did not answer: ${detail}`,
      true,
      {
        cause: error,
      },
    );
  return new StoreError('StoreRejected', `${what}: the S3 server refused: ${detail}`, false, {
    cause: error,
  });
};
