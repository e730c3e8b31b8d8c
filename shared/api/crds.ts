import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CRD_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds');

/** The CRD manifests (YAML texts), in file-name order. */
export const crdTexts = (dir = CRD_DIR): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'));
