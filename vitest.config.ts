import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/quiet-logs.ts', 'test/support/english-messages.ts'],
    // Records each function's AWS calls as judged against its role (docs/permissions.md).
    globalSetup: ['test/support/iam-usage.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Integration tests start their own dynalite and simulators on loopback ports chosen by the OS,
    // so files can run in parallel without clashing.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
