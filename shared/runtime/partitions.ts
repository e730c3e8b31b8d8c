import type { NatsConnection } from '@nats-io/nats-core';

/** The priority levels of a prioritized JetStream consumer: 0 is served first, 9 last. */
const LEVELS = 10;

/**
 * A replica's priority for each partition: with the members sorted, member i comes first for the
 * partitions p ≡ i (mod M), then the others in turn. Every replica computes the same from the
 * same member list; while lists differ (one just joined or left), two replicas may both come
 * first for a partition: the server then serves both, and the object lock keeps runs apart.
 */
export const prioritiesOf = (members: readonly string[], self: string, partitions: number): number[] => {
  const sorted = [...new Set([...members, self])].sort();
  const i = sorted.indexOf(self);
  const m = sorted.length;
  return Array.from({ length: partitions }, (_, p) => Math.min(LEVELS - 1, (((p - i) % m) + m) % m));
};

export type Members = {
  /** The members now, sorted, this one included. */
  list(): string[];
  /** Resolves once the others had time to answer the first hello: take priorities from then. */
  readonly heard: Promise<void>;
  /** Says goodbye, so the others take over this one's partitions at once. */
  stop(): void;
};

/**
 * Who else consumes the same partitions: each replica says hello on `subject` (plain NATS, not
 * stored) every `everyMs` and when a stranger says hello, goodbye when it stops; one not heard of
 * for three periods is gone (a crash: its pulls went with its connection, so the server already
 * serves the next in line meanwhile).
 */
export const members = (
  nc: NatsConnection,
  o: {
    subject: string;
    self: string;
    everyMs?: number;
    /** How long the others have to answer the first hello. */
    answerMs?: number;
    onChange(list: string[]): void;
  },
): Members => {
  const every = o.everyMs ?? 2000;
  const seen = new Map<string, number>();
  let current = [o.self];
  const update = () => {
    const now = Date.now();
    for (const [id, at] of seen) if (now - at > every * 3) seen.delete(id);
    const next = [...new Set([o.self, ...seen.keys()])].sort();
    if (next.join('\n') === current.join('\n')) return;
    current = next;
    o.onChange(next);
  };
  // A connection closed under it (the process is ending) must not make a timer throw.
  const say = (text: string) => {
    if (!nc.isClosed()) nc.publish(o.subject, text);
  };
  const hello = () => say(`hello ${o.self}`);
  const sub = nc.subscribe(o.subject, {
    callback: (error, msg) => {
      if (error) return;
      const text = msg.string();
      const space = text.indexOf(' ');
      const [what, id] = [text.slice(0, space), text.slice(space + 1)];
      if (!id || id === o.self) return;
      if (what === 'bye') seen.delete(id);
      else {
        if (!seen.has(id)) hello(); // a newcomer learns of us at once, not a period later
        seen.set(id, Date.now());
      }
      update();
    },
  });
  hello();
  const timer = setInterval(() => {
    hello();
    update();
  }, every);
  return {
    list: () => current,
    heard: new Promise((r) => setTimeout(r, o.answerMs ?? 300)),
    stop: () => {
      clearInterval(timer);
      say(`bye ${o.self}`);
      sub.unsubscribe();
    },
  };
};
