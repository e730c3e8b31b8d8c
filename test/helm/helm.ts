import { parseAllDocuments } from 'yaml';
import { CHART_DIR } from '../../infra/helm/generate.ts';
import { type HelmResult, helm as runHelm, sets } from '../../infra/helm/local/helm.ts';

export { type HelmResult, sets };

/** A Kubernetes object as helm renders it (only what the tests read is typed). */
export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered objects of every kind; tests read their fields
  spec?: any;
  [k: string]: unknown;
};

/** The test bed's helm, not against a cluster (lint, template). */
export const helm = (...args: string[]): Promise<HelmResult> => runHelm(args);

/** `helm template` of Tideway's chart as release `tideway` in `namespace`; fails on an error. */
export const render = async (
  namespace: string,
  values: Record<string, string> = {},
  extra: string[] = [],
): Promise<{ yaml: string; objects: Manifest[] }> => {
  const r = await helm('template', 'tideway', CHART_DIR, '-n', namespace, ...sets(values), ...extra);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  const objects = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((d): d is Manifest => d !== null);
  return { yaml: r.stdout, objects };
};

export const ofKind = (objects: readonly Manifest[], kind: string): Manifest[] =>
  objects.filter((o) => o.kind === kind);

export const named = (objects: readonly Manifest[], kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered chart`);
  return found;
};
