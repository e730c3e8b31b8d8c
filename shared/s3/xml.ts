/*
 * The few XML documents S3 answers with, read by tag: S3's responses are flat, generated XML
 * (no attributes we need, no CDATA, no nesting of a tag in itself), so a full parser buys nothing.
 */

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export const unescapeXml = (s: string): string =>
  s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e.startsWith('#x')
      ? String.fromCodePoint(Number.parseInt(e.slice(2), 16))
      : e.startsWith('#')
        ? String.fromCodePoint(Number.parseInt(e.slice(1), 10))
        : (ENTITIES[e] ?? ''),
  );

export const escapeXml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);

/** The text of the first `<tag>` in `xml`, unescaped; undefined when there is none. */
export const tag = (xml: string, name: string): string | undefined => {
  const m = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? unescapeXml(m[1] ?? '') : undefined;
};

/** The raw inner XML of every `<tag>` in `xml`. */
export const blocks = (xml: string, name: string): string[] =>
  [...xml.matchAll(new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`, 'g'))].map((m) => m[1] ?? '');

/** `<Error><Code>…</Code><Message>…</Message></Error>`, or undefined when the body is no S3 error. */
export const errorOf = (xml: string): { code: string; message: string } | undefined => {
  const body = blocks(xml, 'Error')[0];
  const code = body === undefined ? undefined : tag(body, 'Code');
  return body !== undefined && code ? { code, message: tag(body, 'Message') ?? '' } : undefined;
};
