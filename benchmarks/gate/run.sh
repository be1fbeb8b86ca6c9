#!/usr/bin/env bash
# Builds and runs the health gate benchmark (benchmarks/gate/gate_bench.cc): plain code
# against vector code per test, memcpy, and rngtest (rng-tools) on the same bytes.
#   benchmarks/gate/run.sh [MiB]      RNGTEST=/path/to/rngtest to pick the binary
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/ccache.sh
cmake -S . -B build/benchmarks -DCMAKE_BUILD_TYPE=Release -DQENTROPY_BENCHMARKS=ON "${ccache_cmake_args[@]}" >/dev/null
nice cmake --build build/benchmarks --target gate_bench -j 2 >/dev/null
echo "load: $(uptime)"
./build/benchmarks/gate_bench "${1:-16}"
