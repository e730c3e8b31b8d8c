import { DnsFormatError } from './errors.ts';
import type { Forwarder, Transport } from './forward.ts';
import { type LookupOptions, lookup } from './lookup.ts';
import {
  decodeHeader,
  decodeMessage,
  encodeMessage,
  type Message,
  type Question,
  RCODE,
  type ResourceRecord,
} from './message.ts';
import type { ClusterView } from './view.ts';

/** A query's bytes in, the reply's bytes out (undefined: send nothing, as for a stray response). */
export type DnsHandler = (query: Buffer, transport: Transport) => Promise<Buffer | undefined>;

/** The largest UDP reply we send when a client advertises more (EDNS); 1232 avoids fragmentation. */
const MAX_UDP = 1232;
const CLASSIC_UDP = 512;

/**
 * The cluster DNS: answers the cluster domain from the view, forwards the rest, and answers
 * SERVFAIL when no upstream replies. Replies over UDP that do not fit the client's buffer go out
 * truncated (TC, no records), so the client asks again over TCP.
 */
export const clusterDnsHandler =
  (o: { view: () => ClusterView; forwarder: Forwarder; lookup: LookupOptions }): DnsHandler =>
  async (bytes, transport) => {
    let header: ReturnType<typeof decodeHeader>;
    try {
      header = decodeHeader(bytes);
    } catch {
      return undefined;
    }
    if (header.qr) return undefined;
    let query: Message;
    try {
      query = decodeMessage(bytes);
    } catch (error) {
      if (!(error instanceof DnsFormatError)) throw error;
      return encodeMessage(replyTo({ ...header, questions: [] }, RCODE.FORMERR));
    }
    const q = query.questions[0];
    if (query.opcode !== 0) return encodeMessage(replyTo(query, RCODE.NOTIMP));
    if (query.questions.length !== 1 || !q) return encodeMessage(replyTo(query, RCODE.FORMERR));
    if (query.edns && query.edns.version > 0) return encodeMessage(replyTo(query, RCODE.BADVERS));

    const result = lookup(o.view(), q, o.lookup);
    if (result.kind === 'forward') {
      const reply = await o.forwarder.forward(bytes, transport);
      return reply ?? encodeMessage(replyTo(query, RCODE.SERVFAIL));
    }
    if (result.kind === 'chase') {
      const answers = await chase(o.forwarder, query, q, result.target, transport);
      const records = answers ? [result.cname, ...answers] : [];
      return fitToTransport(replyTo(query, RCODE.NOERROR, { answers: records, aa: true }), query, transport);
    }
    return fitToTransport(
      replyTo(query, result.rcode, {
        answers: result.answers,
        authorities: result.authorities,
        additionals: result.additionals,
        aa: result.rcode !== RCODE.REFUSED,
      }),
      query,
      transport,
    );
  };

/** A reply to `query` with its ID, question, RD and EDNS (our buffer size, its DO bit). */
const replyTo = (
  query: Pick<Message, 'id' | 'opcode' | 'rd' | 'questions'> & { edns?: Message['edns'] },
  rcode: number,
  records: {
    answers?: readonly ResourceRecord[];
    authorities?: readonly ResourceRecord[];
    additionals?: readonly ResourceRecord[];
    aa?: boolean;
  } = {},
): Message => ({
  id: query.id,
  qr: true,
  opcode: query.opcode,
  aa: records.aa ?? false,
  tc: false,
  rd: query.rd,
  ra: true,
  rcode,
  questions: query.questions,
  answers: records.answers ?? [],
  authorities: records.authorities ?? [],
  additionals: records.additionals ?? [],
  edns: query.edns ? { udpSize: MAX_UDP, version: 0, dnssecOk: query.edns.dnssecOk } : undefined,
});

/** Over UDP, a reply larger than the client takes goes out as header and question with TC set. */
const fitToTransport = (reply: Message, query: Message, transport: Transport): Buffer => {
  const bytes = encodeMessage(reply);
  if (transport === 'tcp') return bytes;
  const limit = query.edns ? Math.min(Math.max(query.edns.udpSize, CLASSIC_UDP), MAX_UDP) : CLASSIC_UDP;
  if (bytes.length <= limit) return bytes;
  return encodeMessage({ ...reply, tc: true, answers: [], authorities: [], additionals: [] });
};

/** The records of an ExternalName's target, asked upstream as the client asked us. */
const chase = async (
  forwarder: Forwarder,
  query: Message,
  q: Question,
  target: string,
  transport: Transport,
): Promise<readonly ResourceRecord[] | undefined> => {
  const ask = encodeMessage({
    ...replyTo(query, 0),
    qr: false,
    ra: false,
    rd: true,
    questions: [{ name: target, type: q.type, class: q.class }],
  });
  const reply = await forwarder.forward(ask, transport);
  if (!reply) return undefined;
  try {
    return decodeMessage(reply).answers;
  } catch {
    return undefined;
  }
};
