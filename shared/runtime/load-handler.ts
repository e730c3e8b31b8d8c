import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from './config.ts';
import type { FailureStatus, LockKey } from './handler.ts';

/** `functions/reconcile/index.handler` → functions/reconcile/index.ts (imported) and `handler`. */
const importModule = async (serverlessFile: string, handler: string) => {
  const dot = handler.lastIndexOf('.');
  const base = resolve(dirname(serverlessFile), handler.slice(0, dot));
  const exportName = handler.slice(dot + 1);
  const file = ['.ts', '.js', '.mjs'].map((e) => base + e).find((f) => existsSync(f));
  if (!file)
    throw new ConfigError(`handler ${handler}: no module ${base}.ts (or .js) next to ${serverlessFile}`);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  return { mod, file, exportName };
};

/** `functions/reconcile/index.handler` → the export `handler` of functions/reconcile/index.ts. */
export const loadExport = async (serverlessFile: string, handler: string): Promise<unknown> => {
  const { mod, file, exportName } = await importModule(serverlessFile, handler);
  if (typeof mod[exportName] !== 'function') {
    throw new ConfigError(`handler ${handler}: ${file} has no exported function ${exportName}`);
  }
  return mod[exportName];
};

/** A function exported next to a handler under `name`, if its module has one. */
const loadHook = async (serverlessFile: string, handler: string, name: string, shape: string) => {
  const { mod, file } = await importModule(serverlessFile, handler);
  if (mod[name] === undefined) return undefined;
  if (typeof mod[name] !== 'function')
    throw new ConfigError(`handler ${handler}: ${file} exports ${name}, but not as a function ${shape}`);
  return mod[name];
};

/** The `lockKey` exported next to a handler (see LockKey in handler.ts), if its module has one. */
export const loadLockKey = async (serverlessFile: string, handler: string) =>
  (await loadHook(serverlessFile, handler, 'lockKey', '(event) => string')) as LockKey | undefined;

/** The `failureStatus` exported next to a handler (see FailureStatus in handler.ts), if any. */
export const loadFailureStatus = async (serverlessFile: string, handler: string) =>
  (await loadHook(serverlessFile, handler, 'failureStatus', '(report, status) => status')) as
    | FailureStatus
    | undefined;
