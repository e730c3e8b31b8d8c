import { z } from 'zod';

/**
 * How many copies JetStream keeps of Tideway's stream, lock stream and watcher cursor: 1 on one
 * NATS server (local), 3 on a three-server JetStream cluster (production), so losing one server
 * loses no event, lock or cursor. Odd, at most 5, as JetStream wants; one setting for all three.
 */
export const zBusReplicas = z.preprocess(
  // Unset or empty (a chart value left blank): the default.
  (v) => (v === '' ? undefined : v),
  z.coerce
    .number()
    .int()
    .refine((n) => [1, 3, 5].includes(n), 'TIDEWAY_NATS_REPLICAS must be 1, 3 or 5 (JetStream replicas)')
    .default(1),
);

export const busReplicas = (env: Readonly<Record<string, string | undefined>>): number =>
  zBusReplicas.parse(env.TIDEWAY_NATS_REPLICAS);
