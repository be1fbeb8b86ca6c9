import { defineConfig } from 'vitest/config';

// Loaded machines are slower: QENTROPY_TEST_TIME_SCALE (test/helpers/time.ts) stretches
// every deadline, these timeouts included. Tests wait for events, so a larger scale costs
// nothing when everything works.
const scale = Math.max(1, Number(process.env.QENTROPY_TEST_TIME_SCALE) || 1);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The installed-package tests run once per Node line from scripts/test-installed.sh.
    exclude: ['test/installed/**', '**/node_modules/**'],
    // SQLite handles catch a Db call made inside one of its own transactions (a deadlock).
    env: { QENTROPY_CHECK_TRANSACTIONS: '1' },
    // Servers, databases and native work: a generous bound for a hung test, not a speed limit.
    testTimeout: 120_000 * scale,
    hookTimeout: 120_000 * scale,
    pool: 'forks',
    // Two cores: running more files at once only makes timing-sensitive tests flaky.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
