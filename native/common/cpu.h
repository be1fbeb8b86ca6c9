// Run-time CPU feature detection, so one binary picks the fastest code path the host
// supports (SIMD kernels are compiled with per-function target attributes).
#pragma once

#include <string>
#include <vector>

namespace qe::cpu {

bool has_avx2();
bool has_avx512bw();  // AVX-512 F + BW (what byte-wise kernels need)
bool has_popcnt();
bool has_ssse3();  // byte shuffles with a variable index (pshufb)
bool has_rdseed();
bool has_rdrand();

// Names of the features above that this CPU has, for `qentropy version`.
std::vector<std::string> feature_names();

}  // namespace qe::cpu
