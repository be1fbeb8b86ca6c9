// SP 800-22 test 2.6, the discrete Fourier transform (spectral) test, with our own FFT.
//
// The reference (sts-2.1.2) transforms x_j = 2 bit_j - 1 with FFTPACK's real forward
// transform of length n, takes the moduli of the first n/2 coefficients (index 0, the DC
// term |sum x_j|, included; the Nyquist term excluded), counts those strictly below
// T = sqrt(2.995732274 n) (log(1/0.05) rounded to 10 digits), and compares the count with
// N_0 = 0.95 n / 2 using d = (N_1 - N_0) / sqrt(n/4 * 0.95 * 0.05). We compute the same
// moduli with a real-input FFT of the same length n:
//   * n even: the n real values are packed into n/2 complex ones (even index real, odd
//     index imaginary), one complex FFT of length n/2, then the usual split step;
//   * n odd: a complex FFT of length n on the real values.
// The complex FFT is a depth-first recursive mixed-radix transform (radix 4, 2, 3, 5 and
// generic primes up to 31; for n = 10^6 the length 500,000 = 5^6 * 2 * 4^2) on split
// real/imaginary arrays, four columns of a level at a time in vector registers; a length
// with a larger prime factor goes through Bluestein's chirp-z algorithm with a
// power-of-two FFT, so every n is O(n log n). Plan, twiddle tables and buffers are kept
// per thread for the last n seen.
//
// The transform itself is in fft_engine.h, compiled here for any x86-64 and in fft_fma.cc
// with AVX2 + FMA (GCC on x86-64), picked at run time: 2.3 against 4.3 ms per 10^6 bits
// on the development VM. They round differently in the last bits, so a count could
// differ only for a modulus within ~1e-12 relative of sqrt(2.995732274 n): the same
// exposure as ours against NIST's FFTPACK (docs/sts.md), checked for both copies on the
// five shared NIST vectors.
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/cpu.h"
#include "sts/fft_detail.h"
#include "sts/fft_engine.h"
#include "sts/special.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

bool use_fma_path() {
  static const bool fma = detail::fma_fft_available() && cpu::has_avx2() && cpu::has_fma();
  return fma;
}

// How many k in 1 .. floor(n/2) - 1 have |F_k|^2 < bound, by the fastest transform this
// CPU runs.
size_t fastest_count_below(const Bits& bits, double bound) {
  return use_fma_path() ? detail::count_squared_moduli_below_fma(bits, bound)
                        : detail::count_squared_moduli_below_portable(bits, bound);
}

}  // namespace

namespace detail {

void half_squared_moduli_portable(const Bits& bits, double* out) { half_squared_moduli_into(bits, out); }
size_t count_squared_moduli_below_portable(const Bits& bits, double bound) {
  return count_squared_moduli_below(bits, bound);
}

std::vector<double> dft_half_moduli(const Bits& bits) {
  std::vector<double> moduli(bits.n / 2);
  if (use_fma_path()) {
    half_squared_moduli_fma(bits, moduli.data());
  } else {
    half_squared_moduli_portable(bits, moduli.data());
  }
  for (double& m : moduli) m = std::sqrt(m);
  return moduli;
}

}  // namespace detail

TestResult fft(const Bits& bits) {
  const size_t n = bits.n;
  if (n == 0) return TestResult::not_applicable(1, "empty sequence (n = 0)");
  const double nd = static_cast<double>(n);
  // m_k < sqrt(2.995732274 n) is decided as m_k^2 < 2.995732274 n (no square roots).
  const double bound_squared = 2.995732274 * nd;
  // Index 0 is |sum x_j|, an integer: take it exactly rather than from the transform.
  const double dc = 2.0 * static_cast<double>(detail::count_ones(bits, 0, n)) - nd;
  size_t count = n / 2 == 0 ? 0 : (dc * dc < bound_squared);
  if (n / 2 > 1) count += fastest_count_below(bits, bound_squared);
  const double N_l = static_cast<double>(count);
  const double N_o = 0.95 * nd / 2.0;
  const double d = (N_l - N_o) / std::sqrt(nd / 4.0 * 0.95 * 0.05);
  return TestResult{{erfc(std::fabs(d) / std::sqrt(2.0))}, {}};
}

}  // namespace qe::sts
