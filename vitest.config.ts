import { defineConfig } from 'vitest/config';

// Two projects: `unit` (no test bed; pure logic and local-kernel tests next to the code) and
// `e2e` (test/, against the real test bed started once per run by the global setup).
export const config = defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['functions/**/*.test.ts', 'shared/**/*.test.ts', 'infra/**/*.test.ts', 'scripts/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

export default config;
