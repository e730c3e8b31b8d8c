import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from './config.ts';

/** `functions/reconcile/index.handler` → the export `handler` of functions/reconcile/index.ts. */
export const loadExport = async (serverlessFile: string, handler: string): Promise<unknown> => {
  const dot = handler.lastIndexOf('.');
  const base = resolve(dirname(serverlessFile), handler.slice(0, dot));
  const exportName = handler.slice(dot + 1);
  const file = ['.ts', '.js', '.mjs'].map((e) => base + e).find((f) => existsSync(f));
  if (!file)
    throw new ConfigError(`handler ${handler}: no module ${base}.ts (or .js) next to ${serverlessFile}`);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  if (typeof mod[exportName] !== 'function') {
    throw new ConfigError(`handler ${handler}: ${file} has no exported function ${exportName}`);
  }
  return mod[exportName];
};
