import { Readable } from 'node:stream';
import { EtcdAbortedError, EtcdConnectionError } from './errors.ts';
import { NdjsonDecoder } from './ndjson.ts';
import { SnapshotAssembler } from './snapshot-assembler.ts';

export type SnapshotStreamOptions = {
  readonly endpoint?: string;
  readonly signal?: AbortSignal;
  /** No byte from etcd for this long while we wait for one: the stream fails (Timeout). */
  readonly idleTimeoutMs: number;
  /** The same for the first message (default idleTimeoutMs). */
  readonly firstMessageTimeoutMs?: number;
  /** Ends the HTTP exchange (the request is destroyed, the connection closed). */
  readonly abort: () => void;
  readonly highWaterMark?: number;
  readonly maxLineBytes?: number;
};

/**
 * The snapshot's bytes out of the gateway's NDJSON answer. Memory stays bounded: the HTTP body
 * is paused whenever this stream's buffer is full and resumed when the consumer reads, so at most
 * one network chunk (decoded) sits above highWaterMark. An `{"error":…}` message, a stream that
 * ends early or whose SHA-256 is wrong, the idle timeout and the signal all fail this stream;
 * destroying it closes the connection, which makes etcd stop sending.
 */
export class SnapshotStream extends Readable {
  /** Resolves at the first message (dbSize known); rejects if the stream fails before it. */
  readonly ready: Promise<void>;
  readonly #source: Readable;
  readonly #o: SnapshotStreamOptions;
  readonly #decoder: NdjsonDecoder;
  readonly #assembler: SnapshotAssembler;
  #idle: NodeJS.Timeout | undefined;
  #started = false;
  #settled = false;
  #cleaned = false;
  #resolveReady!: () => void;
  #rejectReady!: (e: unknown) => void;

  constructor(source: Readable, o: SnapshotStreamOptions) {
    super({ highWaterMark: o.highWaterMark ?? 256 * 1024 });
    this.#source = source;
    this.#o = o;
    this.#decoder = new NdjsonDecoder({ maxLineBytes: o.maxLineBytes ?? 4 * 1024 * 1024 });
    this.#assembler = new SnapshotAssembler(o.endpoint);
    this.ready = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Whoever opened the stream awaits `ready`; this only keeps an unawaited one quiet.
    this.ready.catch(() => {});
    if (o.signal?.aborted) {
      queueMicrotask(() => this.#onAbort());
      return;
    }
    o.signal?.addEventListener('abort', this.#onAbort, { once: true });
    source.on('data', this.#onData);
    source.on('end', this.#onEnd);
    source.on('error', this.#onSourceError);
    source.on('close', this.#onSourceClose);
    this.#armIdle();
  }

  /** The database's size; the stream yields it plus the 32-byte hash. */
  get dbSize(): number | undefined {
    return this.#assembler.dbSize;
  }

  get storageVersion(): string | undefined {
    return this.#assembler.storageVersion;
  }

  override _read() {
    if (this.#settled) return;
    this.#armIdle();
    this.#source.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.#cleanup(true);
    if (!this.#started)
      this.#rejectReady(error ?? new EtcdAbortedError('snapshot: destroyed before it started'));
    callback(error);
  }

  readonly #onData = (chunk: Buffer) => {
    let full = false;
    try {
      for (const message of this.#decoder.push(chunk)) {
        const bytes = this.#assembler.accept(message);
        if (!this.#started) {
          this.#started = true;
          this.#resolveReady();
        }
        if (bytes.length > 0 && !this.push(bytes)) full = true;
      }
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (full) {
      // Waiting on the consumer, not on etcd: no idle clock.
      clearTimeout(this.#idle);
      this.#source.pause();
    } else this.#armIdle();
  };

  readonly #onEnd = () => {
    try {
      for (const message of this.#decoder.end()) {
        const bytes = this.#assembler.accept(message);
        if (bytes.length > 0) this.push(bytes);
      }
      this.#assembler.finish();
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#cleanup(false);
    this.push(null);
  };

  readonly #onSourceError = (error: Error) => {
    this.#fail(
      new EtcdConnectionError('Connection', `snapshot from ${this.#o.endpoint ?? 'etcd'}: ${error.message}`, {
        endpoint: this.#o.endpoint,
        cause: error,
      }),
    );
  };

  readonly #onSourceClose = () => {
    if (!this.#settled)
      this.#fail(
        new EtcdConnectionError(
          'Connection',
          `snapshot from ${this.#o.endpoint ?? 'etcd'}: the connection closed before the end`,
          { endpoint: this.#o.endpoint },
        ),
      );
  };

  readonly #onAbort = () => {
    this.#fail(
      new EtcdAbortedError(`snapshot from ${this.#o.endpoint ?? 'etcd'}: aborted`, {
        endpoint: this.#o.endpoint,
        cause: this.#o.signal?.reason,
      }),
    );
  };

  #armIdle() {
    clearTimeout(this.#idle);
    if (this.#settled) return;
    const ms = this.#started
      ? this.#o.idleTimeoutMs
      : (this.#o.firstMessageTimeoutMs ?? this.#o.idleTimeoutMs);
    this.#idle = setTimeout(
      () =>
        this.#fail(
          new EtcdConnectionError(
            'Timeout',
            `snapshot from ${this.#o.endpoint ?? 'etcd'}: nothing received for ${ms} ms`,
            { endpoint: this.#o.endpoint },
          ),
        ),
      ms,
    );
  }

  #fail(error: unknown) {
    if (this.#settled) return;
    this.#cleanup(true);
    const e = error instanceof Error ? error : new Error(String(error));
    if (!this.#started) {
      // Nobody holds this stream yet: the error goes to whoever awaits `ready`, not to 'error'.
      this.#started = true;
      this.#rejectReady(e);
      this.destroy();
    } else this.destroy(e);
  }

  /** Once; `close` ends the HTTP exchange too (after a whole answer the connection is kept). */
  #cleanup(close: boolean) {
    this.#settled = true;
    clearTimeout(this.#idle);
    if (this.#cleaned) return;
    this.#cleaned = true;
    this.#o.signal?.removeEventListener('abort', this.#onAbort);
    this.#source.off('data', this.#onData);
    this.#source.off('end', this.#onEnd);
    this.#source.off('close', this.#onSourceClose);
    // Keep an error listener: a late socket error must not become an uncaught exception.
    this.#source.on('error', () => {});
    if (close) {
      this.#o.abort();
      this.#source.destroy();
    }
  }
}
