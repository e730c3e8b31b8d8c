import { createHash } from 'node:crypto';
import { EtcdProtocolError, EtcdServerError, EtcdSnapshotError } from './errors.ts';
import { decodeBase64, parseAnswer, statusOf, zSnapshotChunk } from './wire.ts';

/** Length of the SHA-256 etcd sends after the database. */
export const SNAPSHOT_HASH_BYTES = 32;

/**
 * Follows the Maintenance.Snapshot stream, one gateway message at a time (etcd's v3rpc
 * maintenance.go, 3.3 through 3.6): the database in blobs, each message saying how many bytes
 * remain after it, then one more message whose blob is the SHA-256 of all the database bytes.
 * `accept` returns the bytes to pass on: the database and then the hash, i.e. the file
 * `etcdctl snapshot save` writes and `etcdutl snapshot restore` checks. `finish` at the end of the
 * stream throws unless the database arrived whole and the hash matches. Pure; no I/O.
 */
export class SnapshotAssembler {
  readonly #endpoint: string | undefined;
  readonly #hash = createHash('sha256');
  #dbSize: number | undefined;
  #received = 0;
  #digest: Buffer | undefined;
  #version: string | undefined;

  constructor(endpoint?: string) {
    this.#endpoint = endpoint;
  }

  /** The database's size, known from the first message on. */
  get dbSize(): number | undefined {
    return this.#dbSize;
  }

  /** The storage version etcd ≥ 3.6 reports ("3.6.0"); undefined from 3.5. */
  get storageVersion(): string | undefined {
    return this.#version;
  }

  accept(message: unknown): Buffer {
    const result = (message as { result?: unknown } | null)?.result;
    if (result === undefined) {
      const status = statusOf(message);
      if (status) throw new EtcdServerError(status.code, status.message, this.#endpoint);
      throw new EtcdProtocolError(`snapshot: a message with neither result nor error`, {
        endpoint: this.#endpoint,
      });
    }
    const chunk = parseAnswer(zSnapshotChunk, result, 'snapshot', this.#endpoint);
    const blob = decodeBase64(chunk.blob);
    if (!blob) throw new EtcdProtocolError('snapshot: a blob is not base64', { endpoint: this.#endpoint });
    if (chunk.version) this.#version = chunk.version;
    if (this.#digest) throw this.#broken('a message after the checksum');
    if (this.#dbSize === undefined) this.#dbSize = blob.length + chunk.remaining_bytes;
    if (this.#received < this.#dbSize) {
      if (this.#received + blob.length + chunk.remaining_bytes !== this.#dbSize)
        throw this.#broken(
          `after ${this.#received} of ${this.#dbSize} bytes, a blob of ${blob.length} leaves ${chunk.remaining_bytes}`,
        );
      this.#hash.update(blob);
      this.#received += blob.length;
      return blob;
    }
    if (blob.length !== SNAPSHOT_HASH_BYTES || chunk.remaining_bytes !== 0)
      throw this.#broken(`the checksum message has ${blob.length} bytes, not ${SNAPSHOT_HASH_BYTES}`);
    this.#digest = blob;
    return blob;
  }

  /** At the end of the stream: throws unless it was whole and its hash matches. */
  finish(): void {
    if (this.#dbSize === undefined || this.#received < this.#dbSize || !this.#digest)
      throw new EtcdSnapshotError(
        'SnapshotTruncated',
        `snapshot ended early: ${this.#received} of ${this.#dbSize ?? '?'} database bytes${this.#digest ? '' : ', no checksum'}`,
        this.#endpoint,
      );
    if (!this.#hash.digest().equals(this.#digest))
      throw new EtcdSnapshotError(
        'SnapshotChecksum',
        'snapshot: the SHA-256 etcd sent does not match the data',
        this.#endpoint,
      );
  }

  #broken(what: string) {
    return new EtcdProtocolError(`snapshot stream out of order: ${what}`, { endpoint: this.#endpoint });
  }
}
