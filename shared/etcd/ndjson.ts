import { EtcdProtocolError } from './errors.ts';

const NL = 0x0a;

/**
 * Splits a byte stream into JSON values, one per line, the way the gateway frames a server stream
 * (`{"result":...}\n` per message). Chunks may end anywhere, inside a line or a UTF-8 character:
 * bytes are kept until their newline and decoded once. A line longer than `maxLineBytes` is an
 * error, so memory stays bounded whatever the peer sends. The last line may lack its newline
 * (etcd 3.5's gateway writes an error that way).
 */
export class NdjsonDecoder {
  readonly #maxLineBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(o: { maxLineBytes: number }) {
    this.#maxLineBytes = o.maxLineBytes;
  }

  /** The values completed by this chunk, in order. */
  push(chunk: Uint8Array): unknown[] {
    const out: unknown[] = [];
    let start = 0;
    let nl = chunk.indexOf(NL, start);
    while (nl >= 0) {
      const piece = chunk.subarray(start, nl);
      if (this.#pendingBytes === 0) {
        // The whole line is in this chunk: parsed from it, not copied.
        if (piece.length > this.#maxLineBytes) throw this.#tooLong();
        this.#parse(Buffer.from(piece.buffer, piece.byteOffset, piece.length).toString('utf8'), out);
      } else {
        this.#add(piece);
        this.#emit(out);
      }
      start = nl + 1;
      nl = chunk.indexOf(NL, start);
    }
    if (start < chunk.length) this.#add(chunk.subarray(start));
    return out;
  }

  /** At end of stream: the last value, if a line without newline is left. */
  end(): unknown[] {
    const out: unknown[] = [];
    this.#emit(out);
    return out;
  }

  #add(piece: Uint8Array) {
    if (piece.length === 0) return;
    this.#pendingBytes += piece.length;
    if (this.#pendingBytes > this.#maxLineBytes) throw this.#tooLong();
    // Copied: the caller's chunk may be reused once push returns.
    this.#pending.push(Buffer.from(piece));
  }

  #tooLong() {
    return new EtcdProtocolError(`a streamed message is over ${this.#maxLineBytes} bytes`);
  }

  #emit(out: unknown[]) {
    if (this.#pendingBytes === 0) return;
    const line = (
      this.#pending.length === 1 ? (this.#pending[0] as Buffer) : Buffer.concat(this.#pending)
    ).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#parse(line, out);
  }

  #parse(line: string, out: unknown[]) {
    if (line.trim() === '') return;
    try {
      out.push(JSON.parse(line));
    } catch (error) {
      throw new EtcdProtocolError(`a streamed message is not JSON: ${line.slice(0, 120)}`, { cause: error });
    }
  }
}
