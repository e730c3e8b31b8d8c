import { describe, expect, it } from 'vitest';
import { blocks, errorOf, escapeXml, tag, unescapeXml } from './xml.ts';

describe('S3 XML', () => {
  it('reads the fields of a listing, keys unescaped', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket>
<IsTruncated>true</IsTruncated><NextKeyMarker>p/a&amp;b</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>
<Upload><Key>p/a&amp;b&lt;1&gt;&#x20;&#33;</Key><UploadId>u1</UploadId></Upload>
<Upload><Key>p/c</Key><UploadId>u2</UploadId></Upload></ListMultipartUploadsResult>`;
    expect(blocks(xml, 'Upload').map((u) => [tag(u, 'Key'), tag(u, 'UploadId')])).toEqual([
      ['p/a&b<1> !', 'u1'],
      ['p/c', 'u2'],
    ]);
    expect(tag(xml, 'IsTruncated')).toBe('true');
    expect(tag(xml, 'NextKeyMarker')).toBe('p/a&b');
    expect(tag(xml, 'Missing')).toBeUndefined();
  });

  it('finds an error answer, also one S3 sends with status 200, and nothing in a result', () => {
    expect(
      errorOf(
        '<?xml version="1.0"?><Error><Code>InternalError</Code><Message>try &quot;again&quot;</Message></Error>',
      ),
    ).toEqual({ code: 'InternalError', message: 'try "again"' });
    expect(
      errorOf('<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>'),
    ).toBeUndefined();
  });

  it('escapes what it writes, and reads it back', () => {
    const s = `"etag"<&>'`;
    expect(escapeXml(s)).toBe('&quot;etag&quot;&lt;&amp;&gt;&apos;');
    expect(unescapeXml(escapeXml(s))).toBe(s);
  });
});
