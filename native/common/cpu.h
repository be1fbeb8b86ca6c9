// Run-time CPU feature detection, so one binary picks the fastest code path the host
// supports (SIMD kernels are compiled with per-function target attributes).
#pragma once

#include <string>
#include <vector>

// Hot loops that count bits are compiled twice, for CPUs with and without the POPCNT
// instruction, and the loader picks one (GCC function multi-versioning). Without it,
// std::popcount / __builtin_popcountll compile to a table-driven libgcc call several times
// slower.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define QE_POPCNT_CLONES
#endif

namespace qe::cpu {

bool has_avx2();
bool has_fma();  // fused multiply-add (FMA3)
bool has_avx512bw();  // AVX-512 F + BW (what byte-wise kernels need)
bool has_avx512vl();  // AVX-512 F + VL (AVX-512 instructions such as vpternlog on 256-bit vectors)
bool has_avx512vbmi2();  // AVX-512 F + BW + VBMI + VBMI2: any-byte permutes and byte compress
bool has_avx512vpopcntdq();  // AVX-512 F + BW + VPOPCNTDQ: popcounts of 64-bit lanes
bool has_popcnt();
bool has_ssse3();  // byte shuffles with a variable index (pshufb)
bool has_sse41();  // SSE4.1 (phminposuw, pmovzx)
bool has_rdseed();
bool has_rdrand();

// Names of the features above that this CPU has, for `qentropy version`.
std::vector<std::string> feature_names();

}  // namespace qe::cpu
