/** Bytes as the client takes them: strings are UTF-8. */
export type Bytes = string | Uint8Array;

export const toBuffer = (b: Bytes): Buffer =>
  typeof b === 'string' ? Buffer.from(b, 'utf8') : Buffer.from(b);

/**
 * The range_end that makes [key, end) cover every key starting with `prefix`: the prefix with its
 * last byte below 0xff incremented and what follows dropped. A prefix of only 0xff bytes (or an
 * empty one) has no such end: etcd reads "\0" as "to the end of the keyspace".
 */
export const prefixEnd = (prefix: Uint8Array): Buffer => {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    const byte = end[i] as number;
    if (byte < 0xff) {
      end[i] = byte + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
};
