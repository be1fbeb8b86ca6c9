#!/usr/bin/env bash
# Every test: types, the C++ core (plain and under sanitizers), and the TypeScript suite
# against the real addon, SQLite, PostgreSQL (QENTROPY_PG_URL), TLS, SoftHSMv2 and the
# kernel. Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT

echo "== typecheck"
npx tsc -p tsconfig.json --noEmit || status=1

bash scripts/test-native.sh 2>&1 | tee "$report/native.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

echo "== TypeScript tests (vitest)"
npx vitest run --reporter=default --reporter=json --outputFile.json="$report/vitest.json" || status=1

node - "$report" <<'JS'
const fs = require('node:fs');
const dir = process.argv[2];
let passed = 0, failed = 0, skipped = 0;
for (const m of fs.readFileSync(`${dir}/native.log`, 'utf8').matchAll(/tests passed, (\d+) tests failed out of (\d+)/g)) {
  failed += Number(m[1]);
  passed += Number(m[2]) - Number(m[1]);
}
try {
  const v = JSON.parse(fs.readFileSync(`${dir}/vitest.json`, 'utf8'));
  passed += v.numPassedTests; failed += v.numFailedTests; skipped += v.numPendingTests + v.numTodoTests;
} catch { failed += 1; }
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
JS
exit $status
