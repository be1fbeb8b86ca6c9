#!/usr/bin/env bash
# The C++ unit tests of the native core, twice: optimised, and under AddressSanitizer +
# UndefinedBehaviorSanitizer (CMakePresets.json). Neither build needs Node headers.
set -euo pipefail
cd "$(dirname "$0")/.."

for preset in native-tests sanitize; do
  echo "== native tests: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" >/dev/null
  ctest --preset "$preset"
done
