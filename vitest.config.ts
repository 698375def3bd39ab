import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites spawn servers and open SQLite files; two cores run them best two at a time.
    maxWorkers: 2,
    globalSetup: ['test/globalSetup.ts'],
  },
});
