/**
 * Header value encoding of the CloudEvents HTTP binding (3.1.3.2), used for NATS headers too:
 * space, double quote, percent and anything outside printable ASCII are percent-encoded UTF-8.
 */
export const percentEncode = (value: string): string => {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const printable = byte >= 0x21 && byte <= 0x7e && byte !== 0x22 && byte !== 0x25;
    out += printable ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
};

/** Inverse of percentEncode; invalid sequences are kept literally rather than failing the event. */
export const percentDecode = (value: string): string => {
  if (!value.includes('%')) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const hex = value.slice(i + 1, i + 3);
    if (value[i] === '%' && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(value[i] ?? '', 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
};
