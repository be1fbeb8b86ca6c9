// The spectral test's FFT (fft_engine.h) compiled with AVX2 + FMA, for CPUs that have both
// (fft.cc decides at run time). The standard headers come first, under the default
// target, so only this file's own anonymous-namespace code is built for AVX2 + FMA.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "sts/bitwords.h"
#include "sts/fft_detail.h"
#include "sts/sts.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_FFT_FMA 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "sts/fft_engine.h"

namespace qe::sts::detail {
void half_squared_moduli_fma(const Bits& bits, double* out) { half_squared_moduli_into(bits, out); }
size_t count_squared_moduli_below_fma(const Bits& bits, double bound) { return count_squared_moduli_below(bits, bound); }
}  // namespace qe::sts::detail
#pragma GCC pop_options
#endif

namespace qe::sts::detail {

#ifdef QE_FFT_FMA
bool fma_fft_available() { return true; }
#else
bool fma_fft_available() { return false; }
void half_squared_moduli_fma(const Bits& bits, double* out) { half_squared_moduli_portable(bits, out); }
size_t count_squared_moduli_below_fma(const Bits& bits, double bound) {
  return count_squared_moduli_below_portable(bits, bound);
}
#endif

}  // namespace qe::sts::detail
