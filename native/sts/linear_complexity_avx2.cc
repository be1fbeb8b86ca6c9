// The linear complexity test's Berlekamp-Massey (linear_complexity_engine.h) compiled with
// AVX2, for CPUs that have it (linear_complexity.cc decides at run time). The standard
// headers come first, under the default target, so only this file's own
// anonymous-namespace code is built for AVX2.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sts/bitwords.h"
#include "sts/linear_complexity_detail.h"
#include "sts/sts.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_LINEAR_COMPLEXITY_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2")
#include "sts/linear_complexity_engine.h"

namespace qe::sts::detail {
void linear_complexities_avx2(const Bits& bits, size_t M, size_t* complexity) {
  linear_complexities_into(bits, M, complexity);
}
}  // namespace qe::sts::detail
#pragma GCC pop_options
#endif

namespace qe::sts::detail {

#ifdef QE_LINEAR_COMPLEXITY_AVX2
bool avx2_linear_complexity_available() { return true; }
#else
bool avx2_linear_complexity_available() { return false; }
void linear_complexities_avx2(const Bits& bits, size_t M, size_t* complexity) {
  linear_complexities_portable(bits, M, complexity);
}
#endif

}  // namespace qe::sts::detail
