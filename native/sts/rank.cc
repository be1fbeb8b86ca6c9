// SP 800-22 test 2.5, binary matrix rank, with the reference's fixed 32 x 32 matrices.
// Matrix k is bits [1024k, 1024(k+1)), row i = the 32 bits at 1024k + 32i, so one
// 64-bit word holds two rows; the rank over GF(2) is found by eliminating with whole
// 32-bit rows (one masked XOR per row per pivot).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "sts/sts.h"

namespace qe::sts {
namespace {

// Rank over GF(2) by row reduction with the leading bit of each row as its pivot: no
// pivot search (and no mispredicted branch for it). Once row r is taken (and counted if
// nonzero), its leading bit is cleared from every row that has it. Later rows thus end
// up with distinct pivot columns and the count of nonzero rows is the rank; earlier rows
// and row r itself are also XORed, which is harmless because they are never read again
// and it keeps the inner loop at a fixed 32 lanes with a uniform shift, which vectorizes.
//
// Two matrices are reduced side by side: each step depends on the previous one through
// the rows, so interleaving two independent chains keeps the core busy.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void rank32_pair(uint32_t a[32], uint32_t b[32], int& rank_a, int& rank_b) {
  int ra = 0;
  int rb = 0;
  for (int r = 0; r < 32; ++r) {
    const uint32_t pa = a[r];
    const uint32_t pb = b[r];
    ra += pa != 0;
    rb += pb != 0;
    // A zero row eliminates nothing: its mask is 0 (col is then irrelevant but in range).
    const int ca = pa ? 31 - std::countl_zero(pa) : 0;
    const int cb = pb ? 31 - std::countl_zero(pb) : 0;
    for (int j = 0; j < 32; ++j) {
      a[j] ^= pa & (0u - ((a[j] >> ca) & 1u));
      b[j] ^= pb & (0u - ((b[j] >> cb) & 1u));
    }
  }
  rank_a = ra;
  rank_b = rb;
}

void load_matrix(const uint64_t* m, uint32_t rows[32]) {
  for (int i = 0; i < 16; ++i) {
    rows[2 * i] = static_cast<uint32_t>(m[i] >> 32);
    rows[2 * i + 1] = static_cast<uint32_t>(m[i]);
  }
}

// Probability that a random 32 x 32 matrix over GF(2) has rank r, in the reference's
// arithmetic: 2^(r(64 - r) - 1024) * prod_{i<r} (1 - 2^(i-32))^2 / (1 - 2^(i-r)).
double rank_probability(int r) {
  double product = 1;
  for (int i = 0; i <= r - 1; ++i) {
    product *= ((1.e0 - std::pow(2, i - 32)) * (1.e0 - std::pow(2, i - 32))) / (1.e0 - std::pow(2, i - r));
  }
  return std::pow(2, r * (32 + 32 - r) - 32 * 32) * product;
}

}  // namespace

TestResult rank(const Bits& bits) {
  const size_t N = bits.n / 1024;
  if (N == 0) {
    return TestResult::not_applicable(1, "n = " + std::to_string(bits.n) + " is too short: one 32x32 matrix needs 1024 bits");
  }
  const double p_32 = rank_probability(32);
  const double p_31 = rank_probability(31);
  const double p_30 = 1 - (p_32 + p_31);

  size_t f_32 = 0;
  size_t f_31 = 0;
  const uint64_t* w = bits.words.data();
  alignas(32) uint32_t a[32];
  alignas(32) uint32_t b[32];
  int ra = 0;
  int rb = 0;
  for (size_t k = 0; k < N; k += 2) {
    load_matrix(w + 16 * k, a);
    if (k + 1 < N) {
      load_matrix(w + 16 * (k + 1), b);
    } else {
      std::fill(b, b + 32, 0u);  // odd count: a dummy zero matrix (rank 0, not counted)
    }
    rank32_pair(a, b, ra, rb);
    f_32 += ra == 32;
    f_31 += ra == 31;
    if (k + 1 < N) {
      f_32 += rb == 32;
      f_31 += rb == 31;
    }
  }
  const double Nd = static_cast<double>(N);
  const double F_32 = static_cast<double>(f_32);
  const double F_31 = static_cast<double>(f_31);
  const double F_30 = Nd - (F_32 + F_31);
  const double chi_squared = std::pow(F_32 - Nd * p_32, 2) / (Nd * p_32) + std::pow(F_31 - Nd * p_31, 2) / (Nd * p_31) +
                             std::pow(F_30 - Nd * p_30, 2) / (Nd * p_30);
  return TestResult{{std::exp(-chi_squared / 2.e0)}, {}};
}

}  // namespace qe::sts
