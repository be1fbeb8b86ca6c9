#!/usr/bin/env bash
# Every test: types, the C++ core (plain and under sanitizers), the prebuilds, the
# TypeScript suite against the real addon, SQLite, PostgreSQL (QENTROPY_PG_URL), TLS,
# SoftHSMv2 and the kernel, on this machine's Node and again on Node 26, and the packed
# tarball installed and smoke-tested on Node 22, 24 and 26 plus the arm64 prebuild under
# qemu (docs/install.md). Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
step() { echo "== $1 (+$((SECONDS))s)"; }

step "typecheck"
npx tsc -p tsconfig.json --noEmit || status=1

step "native tests"
bash scripts/test-native.sh 2>&1 | tee "$report/native.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

# Fuzz targets (QENTROPY_FUZZ_SECONDS each, default 60) and the addon under ASan/UBSan
# (docs/fuzzing.md); added by issue 26 item 10.
step "fuzz targets and the sanitized addon"
bash scripts/test-fuzz.sh || status=1
bash scripts/test-addon-sanitized.sh || status=1

step "prebuilds (linux-x64, linux-arm64)"
npm run prebuild || status=1

step "TypeScript tests (vitest) on Node $(node --version)"
# The cross-runtime KME test (test/kme-node-lines.test.ts) runs its second site on Node 26.
QENTROPY_OTHER_NODE=$(bash scripts/node-line.sh 26) && export QENTROPY_OTHER_NODE || status=1
npx vitest run --reporter=default --reporter=json --outputFile.json="$report/vitest.json" || status=1

step "Node 26"
bash scripts/test-node-line.sh 26 --reporter=default --reporter=json --outputFile.json="$report/vitest-node26.json" || status=1

step "installed package"
bash scripts/test-installed.sh "$report" 22 24 26 || status=1
[[ -f $report/installed-times.txt ]] && cat "$report/installed-times.txt"
step "done"

node - "$report" <<'JS'
const fs = require('node:fs');
const dir = process.argv[2];
let passed = 0, failed = 0, skipped = 0;
for (const m of fs.readFileSync(`${dir}/native.log`, 'utf8').matchAll(/tests passed, (\d+) tests failed out of (\d+)/g)) {
  failed += Number(m[1]);
  passed += Number(m[2]) - Number(m[1]);
}
// One JSON per vitest run: the main suite, Node 26, each installed-package line, arm64.
const expected = ['vitest.json', 'vitest-node26.json', 'vitest-installed-22.json', 'vitest-installed-24.json', 'vitest-installed-26.json', 'vitest-arm64.json'];
for (const name of expected) {
  try {
    const v = JSON.parse(fs.readFileSync(`${dir}/${name}`, 'utf8'));
    passed += v.numPassedTests; failed += v.numFailedTests; skipped += v.numPendingTests + v.numTodoTests;
    // A failed hook fails its file without failing a test: count it, so the line agrees with the exit status.
    if (!v.success && v.numFailedTests === 0) { console.log(`${name}: ${v.numFailedTestSuites} suite(s) failed outside their tests`); failed += v.numFailedTestSuites || 1; }
  } catch { console.log(`${name}: no results`); failed += 1; }
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
JS
exit $status
