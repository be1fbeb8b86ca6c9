#!/usr/bin/env bash
# Every libFuzzer target in native/fuzz (fuzz_*.cc) under ASan + UBSan, for a bounded time
# each: first the saved crash inputs in native/fuzz/regressions/TARGET/ (each must now run
# clean), then QENTROPY_FUZZ_SECONDS (default 60) of fuzzing from the committed seed corpus
# native/fuzz/corpus/TARGET/. New corpus entries go to a scratch directory, never into the
# checkout; a crash leaves its input in build/fuzz/artifacts/ and fails the script.
# Needs clang and libclang-rt (scripts/setup.sh). docs/fuzzing.md explains the targets.
#
#   QENTROPY_FUZZ_SECONDS=10 bash scripts/test-fuzz.sh [TARGET...]
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."

seconds=${QENTROPY_FUZZ_SECONDS:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "test-fuzz: QENTROPY_FUZZ_SECONDS must be a positive integer, not '$seconds'" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "test-fuzz: clang++ not found (run scripts/setup.sh)" >&2; exit 1; }

source scripts/lib/ccache.sh
cmake --preset fuzz "${ccache_cmake_args[@]}" >/dev/null
nice cmake --build --preset fuzz >/dev/null

# Largest input per target: a few KiB reach every branch of the readers and tests (the
# battery and the 90B tracks grow quadratically in places, so bigger inputs only slow
# the search); the codec's 64 KiB hold 32 entropy blocks.
declare -A max_len=([fuzz_codec]=65536)

if (($#)); then targets=("$@"); else
  targets=()
  for src in native/fuzz/fuzz_*.cc; do targets+=("$(basename "$src" .cc)"); done
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p build/fuzz/artifacts
status=0
for t in "${targets[@]}"; do
  bin=build/fuzz/$t
  [[ -x $bin ]] || { echo "test-fuzz: no target $t" >&2; status=1; continue; }
  opts=(-max_len="${max_len[$t]:-8192}" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="build/fuzz/artifacts/$t-")
  regressions=(native/fuzz/regressions/"$t"/*)
  if ((${#regressions[@]})); then
    if ! "$bin" "${opts[@]}" "${regressions[@]}" >"$scratch/$t.regressions.log" 2>&1; then
      tail -30 "$scratch/$t.regressions.log"; echo "== fuzz $t: a saved regression input fails"; status=1; continue
    fi
  fi
  mkdir -p "$scratch/$t"
  start=$SECONDS
  if "$bin" "${opts[@]}" -max_total_time="$seconds" "$scratch/$t" "native/fuzz/corpus/$t" >"$scratch/$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t.log")
    cov=$(grep -o 'cov: [0-9]*' "$scratch/$t.log" | tail -1)
    echo "== fuzz $t: ok, $runs runs in $((SECONDS - start)) s, $cov, ${#regressions[@]} regression input(s)"
  else
    tail -40 "$scratch/$t.log"
    echo "== fuzz $t: FAILED (input saved in build/fuzz/artifacts/$t-*)"
    status=1
  fi
done
exit $status
