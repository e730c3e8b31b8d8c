import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { own, release } from './buffers.ts';
import { ConfigurationError, IntegrityError } from './errors.ts';

/*
 * Client-side encryption of a backup: AES-256-GCM over chunks, so memory stays bounded and every
 * byte is authenticated before it is released (docs/backup.md, "Encryption format").
 *
 *   header  = "TWAEAD01" (8) | chunk size, u32 big-endian (4) | file id, 16 random bytes
 *   key     = HKDF-SHA256(secret key, salt = file id, info = "tideway.dev backup v1"), 32 bytes
 *   chunk i = AES-256-GCM(key, nonce = i as u64 BE | final ? 1 : 0 as u32 BE, aad = header,
 *             plaintext chunk) | 16-byte tag
 *
 * Every chunk but the last holds exactly `chunk size` plaintext bytes; the last holds 0 to chunk
 * size bytes and is the only one sealed as final. A reordered chunk fails (its index is in the
 * nonce), a dropped tail fails (no chunk sealed as final arrives last), an appended chunk fails
 * (a chunk after the final one), a changed header fails (it is every chunk's associated data),
 * and a chunk of another file fails (another file id, another key). A per-file key means nonces
 * never repeat under one key, however many backups a secret key encrypts.
 */

export const KEY_BYTES = 32;
const MAGIC = Buffer.from('TWAEAD01');
const HEADER_BYTES = MAGIC.length + 4 + 16;
const TAG_BYTES = 16;
const INFO = Buffer.from('tideway.dev backup v1');
export const DEFAULT_CHUNK = 1024 * 1024;
/** A header asking for larger chunks than this is refused: it would make us buffer that much. */
const MAX_CHUNK = 16 * 1024 * 1024;

export const ENCRYPTION_FORMAT = 'tideway-aes-256-gcm-chunked-v1';

/** The key must be 32 bytes exactly: anything else is a mistake, never padded or hashed. */
export const checkKey = (key: Buffer, where: string): Buffer => {
  if (key.length !== KEY_BYTES)
    throw new ConfigurationError(
      'EncryptionKeyInvalid',
      `${where} holds ${key.length} bytes; an AES-256 key is exactly ${KEY_BYTES} bytes (e.g. kubectl create secret generic <name> --from-file=key=<(head -c 32 /dev/urandom))`,
    );
  return key;
};

const fileKey = (key: Buffer, fileId: Buffer) =>
  Buffer.from(hkdfSync('sha256', key, fileId, INFO, KEY_BYTES));

const nonce = (index: number, final: boolean) => {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(BigInt(index), 0);
  n.writeUInt32BE(final ? 1 : 0, 8);
  return n;
};

/** Fills `buf` from `chunk` starting at `at`; returns where it stopped in `chunk`. */
const fill = (buf: Buffer, filled: number, chunk: Buffer, at: number) => {
  const n = Math.min(buf.length - filled, chunk.length - at);
  chunk.copy(buf, filled, at, at + n);
  return n;
};

/**
 * Encrypts a stream. Holds one chunk: a full chunk is sealed only when more data follows, since
 * the last one must be sealed as final. Its input chunks are released once copied, its output
 * is the data path's own (./buffers.ts).
 */
export const encryptor = (key: Buffer, chunkSize = DEFAULT_CHUNK): Transform => {
  checkKey(key, 'the encryption key');
  const fileId = randomBytes(16);
  const header = Buffer.concat([MAGIC, Buffer.alloc(4), fileId]);
  header.writeUInt32BE(chunkSize, MAGIC.length);
  const k = fileKey(key, fileId);
  const buf = Buffer.allocUnsafe(chunkSize);
  let filled = 0;
  let index = 0;
  const seal = (t: Transform, final: boolean) => {
    const cipher = createCipheriv('aes-256-gcm', k, nonce(index++, final));
    cipher.setAAD(header);
    t.push(own(cipher.update(buf.subarray(0, filled))));
    cipher.final();
    t.push(cipher.getAuthTag());
    filled = 0;
  };
  return new Transform({
    construct(callback) {
      this.push(header);
      callback();
    },
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      let at = 0;
      while (at < chunk.length) {
        if (filled === chunkSize) seal(this, false);
        const n = fill(buf, filled, chunk, at);
        filled += n;
        at += n;
      }
      // Copied: the chunk is free (when it is the data path's own, ./buffers.ts).
      release(chunk);
      callback();
    },
    flush(callback) {
      seal(this, true);
      callback();
    },
  });
};

/**
 * Decrypts what `encryptor` wrote. A chunk's plaintext is released only once its tag checks, so
 * nothing unauthenticated leaves; the stream errors (IntegrityError) on a wrong key or any change.
 */
export const decryptor = (key: Buffer): Transform => {
  checkKey(key, 'the encryption key');
  let header: Buffer = Buffer.alloc(0);
  let k: Buffer | undefined;
  let buf: Buffer | undefined;
  let filled = 0;
  let index = 0;
  const open = (t: Transform, final: boolean) => {
    if (!k || !buf) throw new IntegrityError('Truncated', 'the encrypted object ends inside its header');
    if (filled < TAG_BYTES)
      throw new IntegrityError('Truncated', 'the encrypted object ends inside a chunk: it was truncated');
    const decipher = createDecipheriv('aes-256-gcm', k, nonce(index++, final));
    decipher.setAAD(header);
    decipher.setAuthTag(buf.subarray(filled - TAG_BYTES, filled));
    const plain = decipher.update(buf.subarray(0, filled - TAG_BYTES));
    try {
      decipher.final();
    } catch (error) {
      throw new IntegrityError(
        'DecryptionFailed',
        `chunk ${index - 1} of the encrypted object does not authenticate: the encryption key is not the one it was written with, or the object was changed, truncated or reordered`,
        { cause: error },
      );
    }
    filled = 0;
    t.push(plain);
  };
  const readHeader = (chunk: Buffer, at: number) => {
    const n = Math.min(HEADER_BYTES - header.length, chunk.length - at);
    header = Buffer.concat([header, chunk.subarray(at, at + n)]);
    if (header.length < HEADER_BYTES) return n;
    if (!header.subarray(0, MAGIC.length).equals(MAGIC))
      throw new IntegrityError(
        'NotEncrypted',
        'the object is not in Tideway’s encrypted format (no TWAEAD01 header)',
      );
    const chunkSize = header.readUInt32BE(MAGIC.length);
    if (chunkSize < 1 || chunkSize > MAX_CHUNK)
      throw new IntegrityError(
        'NotEncrypted',
        `the encrypted object's header names chunks of ${chunkSize} bytes`,
      );
    k = fileKey(key, header.subarray(MAGIC.length + 4));
    buf = Buffer.allocUnsafe(chunkSize + TAG_BYTES);
    return n;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      try {
        let at = 0;
        while (at < chunk.length) {
          if (!buf) {
            at += readHeader(chunk, at);
            continue;
          }
          if (filled === buf.length) open(this, false);
          const n = fill(buf, filled, chunk, at);
          filled += n;
          at += n;
        }
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback) {
      try {
        open(this, true);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
};
