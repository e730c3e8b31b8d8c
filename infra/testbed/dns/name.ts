import { DnsFormatError } from './errors.ts';

/**
 * Domain names as text: labels joined by dots, no trailing dot (the root is ''). A label byte
 * that would be ambiguous in text (a dot, a backslash, anything not printable) is escaped as
 * `\.`, `\\` or `\DDD`, as in zone files, so a name survives decode → encode unchanged.
 */

const MAX_NAME = 255;
const MAX_LABEL = 63;

/** Splits a textual name into its labels' bytes, undoing the escapes. */
export const nameLabels = (name: string): Buffer[] => {
  const text = name.endsWith('.') && !name.endsWith('\\.') ? name.slice(0, -1) : name;
  if (text === '') return [];
  const labels: Buffer[] = [];
  let bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) {
      labels.push(label(bytes, name));
      bytes = [];
    } else if (c === 0x5c) {
      const digits = text.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(digits) && Number(digits) < 256) {
        bytes.push(Number(digits));
        i += 3;
      } else if (i + 1 < text.length) {
        bytes.push(text.charCodeAt(++i));
      } else throw new DnsFormatError(`name ${JSON.stringify(name)} ends in a backslash`);
    } else if (c > 0xff) {
      throw new DnsFormatError(`name ${JSON.stringify(name)} has a character outside Latin-1`);
    } else bytes.push(c);
  }
  labels.push(label(bytes, name));
  if (labels.reduce((n, l) => n + l.length + 1, 1) > MAX_NAME)
    throw new DnsFormatError(`name ${JSON.stringify(name)} is longer than ${MAX_NAME} bytes`);
  return labels;
};

const label = (bytes: number[], name: string): Buffer => {
  if (bytes.length === 0) throw new DnsFormatError(`name ${JSON.stringify(name)} has an empty label`);
  if (bytes.length > MAX_LABEL)
    throw new DnsFormatError(`name ${JSON.stringify(name)} has a label longer than ${MAX_LABEL} bytes`);
  return Buffer.from(bytes);
};

/** A label's bytes as text, escaped where a byte would be ambiguous. */
export const labelText = (bytes: Buffer): string => {
  let s = '';
  for (const b of bytes) {
    if (b === 0x2e || b === 0x5c) s += `\\${String.fromCharCode(b)}`;
    else if (b <= 0x20 || b >= 0x7f) s += `\\${String(b).padStart(3, '0')}`;
    else s += String.fromCharCode(b);
  }
  return s;
};

/** Lower case for comparing names (DNS compares ASCII letters case-insensitively). */
export const canonical = (name: string): string => name.replace(/\.$/, '').toLowerCase();

/** True when `name` is `zone` or below it. */
export const inZone = (name: string, zone: string): boolean => {
  const n = canonical(name);
  const z = canonical(zone);
  return z === '' || n === z || n.endsWith(`.${z}`);
};

/**
 * Reads a name at `offset`, following compression pointers (each must point backwards, so a
 * hostile message cannot loop). Returns the name and the offset just after it in the message.
 */
export const readName = (buf: Buffer, offset: number): { name: string; next: number } => {
  const labels: string[] = [];
  let at = offset;
  let next = -1;
  let length = 1;
  for (;;) {
    const len = byteAt(buf, at);
    if (len === 0) {
      if (next < 0) next = at + 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      const pointer = ((len & 0x3f) << 8) | byteAt(buf, at + 1);
      if (pointer >= at) throw new DnsFormatError(`compression pointer at ${at} does not point backwards`);
      if (next < 0) next = at + 2;
      at = pointer;
      continue;
    }
    if (len & 0xc0) throw new DnsFormatError(`unknown label type 0x${len.toString(16)} at ${at}`);
    if (at + 1 + len > buf.length) throw new DnsFormatError(`label at ${at} runs past the message`);
    length += len + 1;
    if (length > MAX_NAME) throw new DnsFormatError(`name at ${offset} is longer than ${MAX_NAME} bytes`);
    labels.push(labelText(buf.subarray(at + 1, at + 1 + len)));
    at += 1 + len;
  }
  return { name: labels.join('.'), next };
};

const byteAt = (buf: Buffer, at: number): number => {
  const b = buf[at];
  if (b === undefined) throw new DnsFormatError(`message ends inside a name (offset ${at})`);
  return b;
};
