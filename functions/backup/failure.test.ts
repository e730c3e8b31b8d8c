import { describe, expect, it } from 'vitest';
import { ConfigurationError, StoreError } from '../../shared/backup/errors.ts';
import { SnapshotError } from '../../shared/redis/snapshot.ts';
import { failureOf } from './failure.ts';

describe('failureOf', () => {
  it('keeps the reason and whether to retry of typed errors', () => {
    expect(failureOf(new StoreError('BucketNotFound', 'no bucket', false))).toEqual({
      reason: 'BucketNotFound',
      message: 'no bucket',
      retry: false,
    });
    expect(failureOf(new StoreError('StoreUnavailable', 'down', true)).retry).toBe(true);
    expect(failureOf(new SnapshotError('SourceLost', 'gone'))).toMatchObject({
      reason: 'SourceLost',
      retry: true,
    });
    expect(failureOf(new ConfigurationError('EncryptionKeyInvalid', 'short'))).toMatchObject({
      retry: false,
    });
  });

  it('retries what it does not know', () => {
    expect(failureOf(new Error('socket hang up'))).toEqual({
      reason: 'Error',
      message: 'socket hang up',
      retry: true,
    });
    expect(failureOf('odd')).toEqual({ reason: 'Error', message: 'odd', retry: true });
  });
});
