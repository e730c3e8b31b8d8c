import { describe, expect, it } from 'vitest';
import { classifyS3Error } from './errors.ts';

const ctx = { bucket: 'backups', endpoint: 'http://s3.local', credentials: 's3-creds' };
/** Shaped like the SDK's ServiceException and Node's network errors. */
const service = (Code: string, status: number) =>
  Object.assign(new Error(`${Code} says the server`), {
    name: Code,
    Code,
    $metadata: { httpStatusCode: status },
  });
const network = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });

describe('classifyS3Error', () => {
  it('fails for good on what only the user can fix, naming it', () => {
    const cases: [unknown, string, RegExp][] = [
      [
        service('NoSuchBucket', 404),
        'BucketNotFound',
        /bucket backups does not exist at http:\/\/s3.local: create it/,
      ],
      [service('InvalidAccessKeyId', 403), 'InvalidCredentials', /access key in Secret s3-creds/],
      [service('XAdminUserNotFound', 404), 'InvalidCredentials', /access key in Secret s3-creds/],
      [
        service('SignatureDoesNotMatch', 403),
        'InvalidCredentials',
        /AWS_SECRET_ACCESS_KEY in Secret s3-creds/,
      ],
      [service('AccessDenied', 403), 'AccessDenied', /may not do this in bucket backups/],
      [service('AuthorizationHeaderMalformed', 400), 'WrongRegion', /store.s3.region/],
      [service('SomethingNew', 400), 'StoreRejected', /refused: SomethingNew \(HTTP 400\)/],
    ];
    for (const [error, reason, message] of cases) {
      const e = classifyS3Error(error, ctx, 'uploading');
      expect(e).toMatchObject({ reason, retry: false });
      expect(e.message).toMatch(message);
      expect(e.message.startsWith('uploading: ')).toBe(true);
    }
  });

  it('retries what may pass: the server unreachable, 5xx, throttling, timeouts', () => {
    for (const error of [
      network('ECONNREFUSED'),
      network('ECONNRESET'),
      network('ETIMEDOUT'),
      service('InternalError', 500),
      service('ServiceUnavailable', 503),
      service('SlowDown', 503),
      service('RequestTimeout', 400),
      Object.assign(new Error('aborted'), { name: 'TimeoutError' }),
      service('Whatever', 502),
      service('TooManyRequests', 429),
    ])
      expect(classifyS3Error(error, ctx, 'x')).toMatchObject({ reason: 'StoreUnavailable', retry: true });
  });
});
