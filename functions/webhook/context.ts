import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { ErrorCode } from './errors.ts';

/** What a request carries between middleware and handlers (for the access log). */
export type Env = { Variables: { code: ErrorCode; namespace: string; webhookId: string } };
export type Ctx = Context<Env>;

/** The TCP peer of a request served by @hono/node-server. */
export const nodePeer = (c: Context) =>
  (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress;
