# Sourced by scripts/test.sh: runs the suite as named phases, times each, and ends with
# the totals and one line "tests: N passed, N failed, N skipped".
#   phase NAME COMMAND...     runs COMMAND; a non-zero exit fails the run
#   expect_results FILE...    result files (in $report) that must exist at the end: a phase
#                             that dies before writing them counts as a failure
# Test runners write their results into $report: vitest-*.json (vitest's JSON reporter) and
# native-*.log (ctest's output).
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
status=0
phase_lines=()
expected_results=()

phase() {
  local name=$1 start=$SECONDS rc
  shift
  echo "== $name"
  "$@"
  rc=$?
  ((rc == 0)) || status=1
  local took=$((SECONDS - start))
  local line
  line=$(printf '%-58s %5ds  %s' "$name" "$took" "$( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)")")
  phase_lines+=("$line")
  echo "== $name: ${took}s$( ((rc == 0)) || echo ", FAILED (exit $rc)")"
}

expect_results() { expected_results+=("$@"); }

# vitest with its JSON results in $report/vitest-NAME.json; the rest of the arguments go to vitest.
vitest_json() {
  local name=$1
  shift
  expect_results "vitest-$name.json"
  npx vitest run --reporter=default --reporter=json --outputFile.json="$report/vitest-$name.json" "$@"
}

summary() {
  echo "== phases"
  printf '%s\n' "${phase_lines[@]}"
  printf '%-58s %5ds\n' "total" "$SECONDS"
  node - "$report" "${expected_results[@]}" <<'JS'
const fs = require('node:fs');
const [dir, ...expected] = process.argv.slice(2);
let passed = 0, failed = 0, skipped = 0;
const files = fs.readdirSync(dir);
for (const name of expected) if (!files.includes(name)) { console.log(`${name}: no results`); failed += 1; }
for (const name of files.filter((f) => /^native-.*\.log$/.test(f))) {
  for (const m of fs.readFileSync(`${dir}/${name}`, 'utf8').matchAll(/tests passed, (\d+) tests failed out of (\d+)/g)) {
    failed += Number(m[1]);
    passed += Number(m[2]) - Number(m[1]);
  }
}
for (const name of files.filter((f) => /^vitest-.*\.json$/.test(f))) {
  try {
    const v = JSON.parse(fs.readFileSync(`${dir}/${name}`, 'utf8'));
    passed += v.numPassedTests; failed += v.numFailedTests; skipped += v.numPendingTests + v.numTodoTests;
    // A failed hook fails its file without failing a test: count it, so the line agrees with the exit status.
    if (!v.success && v.numFailedTests === 0) { console.log(`${name}: ${v.numFailedTestSuites} suite(s) failed outside their tests`); failed += v.numFailedTestSuites || 1; }
  } catch { console.log(`${name}: unreadable results`); failed += 1; }
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
JS
}
