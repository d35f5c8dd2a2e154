import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // No test may be skipped silently: a run that executes nothing fails.
    passWithNoTests: false,
    reporters: ['default', './test/reporters/summary-line.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/services/global-setup.ts'],
          // Real JVMs on a shared 2-core machine: generous limits, never timing assertions.
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'compat',
          include: ['test/compat/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/compat/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
