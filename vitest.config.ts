import { defineConfig } from 'vitest/config';

// Two projects: `unit` (no test bed; pure logic and local-kernel tests next to the code) and
// `e2e` (test/, against the real test bed started once per run by the global setup).
export const config = defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'functions/**/*.test.ts',
            'shared/**/*.test.ts',
            'infra/**/*.test.ts',
            'scripts/**/*.test.ts',
            'cli/**/*.test.ts',
          ],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          exclude: ['test/lifecycle/**'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        // Starts and stops whole test beds itself, so it runs on its own after `e2e`.
        test: {
          name: 'lifecycle',
          include: ['test/lifecycle/**/*.test.ts'],
          testTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

export default config;
