import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CRD_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'crds');

/** The CRD manifests: file name and YAML text, in file-name order. */
export const crdFiles = (dir = CRD_DIR): { file: string; text: string }[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(dir, file), 'utf8') }));

/** The CRD manifests (YAML texts), in file-name order. */
export const crdTexts = (dir = CRD_DIR): string[] => crdFiles(dir).map((f) => f.text);
