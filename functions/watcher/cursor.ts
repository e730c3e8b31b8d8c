import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { z } from 'zod';

/** What the watcher last published for one object: the cursor's unit. */
export const zCursorEntry = z.object({
  kind: z.string(),
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
  rv: z.string(),
  generation: z.number().optional(),
  /** The object's fingerprint when last announced (kinds that have one). */
  fp: z.string().optional(),
});
export type CursorEntry = z.infer<typeof zCursorEntry>;

/** Where the watcher keeps what it has published, so a restart knows what it missed. */
export type CursorStore = {
  load(): Promise<Map<string, CursorEntry>>;
  put(key: string, entry: CursorEntry): Promise<void>;
  remove(key: string): Promise<void>;
};

/** `${kind}.${namespace}.${name}`: namespaces and names are DNS-1123, valid KV key characters. */
export const cursorKey = (kind: string, namespace: string, name: string) => `${kind}.${namespace}.${name}`;

export const memoryCursorStore = (): CursorStore & { entries: Map<string, CursorEntry> } => {
  const entries = new Map<string, CursorEntry>();
  return {
    entries,
    load: async () => new Map(entries),
    put: async (k, e) => void entries.set(k, e),
    remove: async (k) => void entries.delete(k),
  };
};

/** The cursor in a JetStream KV bucket (history 1): durable across watcher restarts and failover. */
export const kvCursorStore = async (
  nc: NatsConnection,
  bucket = 'tideway-watcher',
  replicas = 1,
): Promise<CursorStore> => {
  const kv: KV = await new Kvm(nc).create(bucket, { history: 1, replicas });
  return {
    load: async () => {
      const out = new Map<string, CursorEntry>();
      if ((await kv.status()).values === 0) return out;
      const it = await kv.watch();
      for await (const e of it) {
        if (e.operation === 'PUT') {
          const parsed = zCursorEntry.safeParse(e.json());
          // An entry we cannot read is dropped: the relist then re-announces that object (safe).
          if (parsed.success) out.set(e.key, parsed.data);
        } else {
          out.delete(e.key);
        }
        if (e.delta === 0) break;
      }
      it.stop();
      return out;
    },
    put: async (k, e) => {
      await kv.put(k, JSON.stringify(e));
    },
    remove: async (k) => {
      await kv.purge(k);
    },
  };
};
