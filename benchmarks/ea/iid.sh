#!/usr/bin/env bash
# Builds and runs the IID track benchmark (benchmarks/ea/iid_bench.cc): a shuffle and a
# compression statistic alone, then one thread against two on the same fixed seeds.
#   benchmarks/ea/iid.sh [FILE] [SEEDS] [REPEAT]
#   QENTROPY_SIMD=avx2 benchmarks/ea/iid.sh    the code paths of a CPU without AVX-512
set -euo pipefail
cd "$(dirname "$0")/../.."
file=${1:-../shared/vectors/sp800-90b/truerand_8bit.bin}
source scripts/lib/ccache.sh
cmake -S . -B build/benchmarks -DCMAKE_BUILD_TYPE=Release -DQENTROPY_BENCHMARKS=ON "${ccache_cmake_args[@]}" >/dev/null
nice cmake --build build/benchmarks --target iid_bench -j 2 >/dev/null
echo "load: $(uptime)"
./build/benchmarks/iid_bench "$file" "${2:-8}" "${3:-20}"
