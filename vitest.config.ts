import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The installed-package tests run once per Node line from scripts/test-installed.sh.
    exclude: ['test/installed/**', '**/node_modules/**'],
    // SQLite handles catch a Db call made inside one of its own transactions (a deadlock).
    env: { QENTROPY_CHECK_TRANSACTIONS: '1' },
    // Servers, databases and native work: give them room, but keep CI well inside its limit.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: running more files at once only makes timing-sensitive tests flaky.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
