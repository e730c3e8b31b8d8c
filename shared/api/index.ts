export { CRD_DIR, crdTexts } from './crds.ts';
export * from './generated.ts';
