import { defineConfig } from 'vitest/config';

// The CLI's unit tests, runnable on their own: `npx vitest run --config cli/vitest.config.ts`.
// (The root config's `unit` project does not include cli/ yet.)
// biome-ignore lint/style/noDefaultExport: vitest reads the default export
export default defineConfig({ test: { root: `${import.meta.dirname}/..`, include: ['cli/**/*.test.ts'] } });
