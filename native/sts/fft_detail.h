// Internals of the DFT test, exposed for the unit tests (compared there with a direct
// O(n^2) DFT).
#pragma once

#include <vector>

#include "sts/sts.h"

namespace qe::sts::detail {

// |F_k| for k = 0 .. floor(n/2) - 1, where F = DFT of x_j = 2 bit_j - 1 (length n, any n).
std::vector<double> dft_half_moduli(const Bits& bits);

// |F_k|^2 for k < floor(n/2) into out[], by one build of the transform: any x86-64, or
// AVX2 + FMA (callable only when fma_fft_available() and the CPU has both). The test
// picks the faster; the unit tests check each.
void half_squared_moduli_portable(const Bits& bits, double* out);
void half_squared_moduli_fma(const Bits& bits, double* out);
// How many k in 1 .. floor(n/2) - 1 have |F_k|^2 < bound: the spectral test's count
// (index 0 is the caller's), without storing the values, by the same two builds.
size_t count_squared_moduli_below_portable(const Bits& bits, double bound);
size_t count_squared_moduli_below_fma(const Bits& bits, double bound);
bool fma_fft_available();  // false where the compiler could not build the FMA copy

}  // namespace qe::sts::detail
