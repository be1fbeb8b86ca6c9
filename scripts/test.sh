#!/usr/bin/env bash
# `npm test` (contributors) and `npm run test:all` (CI, `scripts/test.sh --all`).
#
# npm test: what tests behaviour, on the running Node (22, 24 or 26; an older machine Node
# is replaced by Node 24 from the npm registry, scripts/lib/supported-node.sh): the
# typecheck, the C++ unit tests, and the TypeScript suite against the real addon, SQLite,
# PostgreSQL (QENTROPY_PG_URL), TLS, SoftHSMv2 and the kernel.
# test:all adds what CI needs besides: the C++ tests under ASan/UBSan, the prebuilds, the
# suite on the other supported Node lines, and the packed tarball installed and
# smoke-tested on Node 22, 24 and 26 plus the arm64 prebuild under qemu (docs/install.md).
#
# Each phase prints its time at its end, then the run prints every phase's time, the total
# and, last, one line "tests: N passed, N failed, N skipped".
#
# Adding a step: one `phase "name" command...` line, in the npm-test block if it tests
# behaviour a contributor changes every day and is quick, else in the test:all block. A
# step with countable results writes them into $report (vitest_json does; ctest output goes
# to $report/native-NAME.log), see scripts/lib/phases.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
all=0
[[ ${1:-} == --all ]] && all=1

source scripts/lib/supported-node.sh
source scripts/lib/phases.sh
source scripts/lib/ccache.sh
node_major=$(supported_node_major)
echo "== Node $(node --version) ($(command -v node)), $(nproc) cores, $(uptime | sed 's/.*load/load/')"

# test/kme-node-lines.test.ts runs its second KME site on a line whose ML-KEM differs from
# this one's: node:crypto has it from Node 24, Node 22 has only @noble/post-quantum.
other_line_of() { (($1 == 22)) && echo 26 || echo 22; }
other_line=$(other_line_of "$node_major")
cross_runtime() { QENTROPY_OTHER_NODE=$(bash scripts/node-line.sh "$other_line") && export QENTROPY_OTHER_NODE; }

# ---- npm test ------------------------------------------------------------------------
phase "typecheck" npx tsc -p tsconfig.json --noEmit
phase "C++ unit tests" bash scripts/test-native.sh "$report" native-tests
phase "Node $other_line for the cross-runtime KME test" cross_runtime
# test/package.test.ts checks the packed tarball and the prebuilds: packaging, so test:all.
phase "TypeScript suite (vitest) on Node $(node --version)" vitest_json "node$node_major" --exclude test/package.test.ts

# ---- npm run test:all (CI) -----------------------------------------------------------
if ((all)); then
  phase "C++ unit tests under ASan/UBSan" bash scripts/test-native.sh "$report" sanitize
  # Fuzz targets (QENTROPY_FUZZ_SECONDS each, default 60) and the addon under ASan/UBSan (docs/fuzzing.md).
  phase "fuzz targets" bash scripts/test-fuzz.sh
  phase "the addon under ASan/UBSan (binding tests)" bash scripts/test-addon-sanitized.sh
  phase "prebuilds (linux-x64, linux-arm64)" npm run prebuild
  phase "package contents and prebuilds (test/package.test.ts)" vitest_json package test/package.test.ts
  for line in 22 24 26; do
    ((line == node_major)) && continue
    QENTROPY_OTHER_NODE=$(bash scripts/node-line.sh "$(other_line_of "$line")") \
      phase "TypeScript suite (vitest) on Node $line" bash scripts/test-node-line.sh "$line" --exclude test/package.test.ts \
      --reporter=default --reporter=json --outputFile.json="$report/vitest-node$line.json"
    expect_results "vitest-node$line.json"
  done
  expect_results vitest-installed-22.json vitest-installed-24.json vitest-installed-26.json vitest-arm64.json
  phase "installed package (Node 22, 24, 26; arm64 under qemu)" bash scripts/test-installed.sh "$report" 22 24 26
  [[ -f $report/installed-times.txt ]] && cat "$report/installed-times.txt"
fi

summary
exit $status
