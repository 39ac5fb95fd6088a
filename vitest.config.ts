import { availableParallelism } from 'node:os';
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
    // A file per core: vitest's default for a run leaves one core idle, and on 2 cores that ran the
    // files one at a time (520 s against 298 s, 29 November 2026). The tests that depend on timing
    // (leases, slices, latency) were written to pass on a loaded machine and did.
    maxWorkers: availableParallelism(),
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
