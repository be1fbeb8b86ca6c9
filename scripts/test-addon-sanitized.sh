#!/usr/bin/env bash
# The Node-API binding layer under AddressSanitizer + UndefinedBehaviorSanitizer: builds the
# addon (native/napi + the core) with -fsanitize=address,undefined into
# build/addon-sanitized, then runs the test files that drive the addon (codec, sts, ea,
# health, pkcs11 against SoftHSMv2) with QENTROPY_ADDON_PATH pointing at it.
#
# Node itself is not instrumented, so GCC's ASan runtime is preloaded (LD_PRELOAD) before
# Node starts. Leak checking is off (detect_leaks=0): Node and V8 keep allocations alive
# until exit on purpose, and LeakSanitizer would report them, not our leaks (the C++ unit
# tests under the `sanitize` preset do check leaks in the core). Any ASan or UBSan report
# aborts the test process, which fails its test file.
#
#   bash scripts/test-addon-sanitized.sh [vitest args...]   # extra args go to vitest
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/addon-sanitized
mkdir -p build
# Release flags (-O3) come first; QENTROPY_SANITIZE's -O1 -g and the sanitizer flags follow.
source scripts/lib/ccache.sh
nice npx cmake-js compile --out "$out" --CDQENTROPY_SANITIZE=ON "${ccache_cmake_js_args[@]}" >"$out.log" 2>&1 || {
  tail -40 "$out.log" >&2
  echo "test-addon-sanitized: the sanitized addon did not build (log: $out.log)" >&2
  exit 1
}
addon="$PWD/$out/Release/qentropy.node"
[[ -f $addon ]] || { echo "test-addon-sanitized: no $addon after the build" >&2; exit 1; }

# The ASan runtime of the compiler that built the addon (cmake-js uses the default c++).
asan=$(c++ -print-file-name=libasan.so)
[[ -f $asan ]] || { echo "test-addon-sanitized: no libasan.so for $(c++ --version | head -1)" >&2; exit 1; }

export QENTROPY_ADDON_PATH="$addon"
export LD_PRELOAD="$asan"
# abort_on_error: a report kills the worker (the file fails); handle_segv=0 leaves SEGV to
# Node (V8 uses it for WebAssembly bounds checks); use_sigaltstack=0 as Node sets its own.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:handle_segv=0:use_sigaltstack=0:allow_user_segv_handler=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "== addon under ASan/UBSan: $addon"
npx vitest run test/codec.test.ts test/sts.test.ts test/ea.test.ts test/native-health.test.ts test/native-pkcs11.test.ts "$@"
