// The two builds of the linear complexity test's Berlekamp-Massey
// (linear_complexity_engine.h), exposed so the unit tests can hold each to the other.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sts/sts.h"

namespace qe::sts::detail {

// The linear complexity of each of the floor(n / M) blocks of M bits of `bits` into
// complexity[]: by the build for any CPU, or by the AVX2 one (callable only when
// avx2_linear_complexity_available() and the CPU has AVX2).
void linear_complexities_portable(const Bits& bits, size_t M, size_t* complexity);
void linear_complexities_avx2(const Bits& bits, size_t M, size_t* complexity);
bool avx2_linear_complexity_available();  // false where the compiler could not build the AVX2 copy

}  // namespace qe::sts::detail
