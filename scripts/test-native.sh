#!/usr/bin/env bash
# The C++ unit tests of the native core, for each CMake preset given (CMakePresets.json):
# native-tests (optimised) and sanitize (AddressSanitizer + UndefinedBehaviorSanitizer).
# Neither build needs Node headers. With Debian's ccache installed, compiles go through it,
# so a rebuild of unchanged sources (a fresh CI clone, a second preset run) is a cache hit.
#   scripts/test-native.sh [REPORT_DIR] [PRESET...]     default: no report, both presets
# ctest's output of preset P is also written to REPORT_DIR/native-P.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ccache.sh
report=
if [[ ${1:-} == /* || ${1:-} == ./* ]]; then report=$1; shift; fi
presets=("$@")
((${#presets[@]})) || presets=(native-tests sanitize)

for preset in "${presets[@]}"; do
  echo "== native tests: $preset"
  cmake --preset "$preset" "${ccache_cmake_args[@]}" >/dev/null
  cmake --build --preset "$preset" >/dev/null
  if [[ -n $report ]]; then
    ctest --preset "$preset" 2>&1 | tee "$report/native-$preset.log"
    exit_code=${PIPESTATUS[0]}
    ((exit_code == 0)) || exit "$exit_code"
  else
    ctest --preset "$preset"
  fi
done
