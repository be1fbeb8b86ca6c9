// Linear complexity (SP 800-22 rev1a section 2.10), matched to the reference
// implementation sts-2.1.2: Berlekamp-Massey on N = floor(n / M) blocks of M bits, the
// statistic T = (-1)^M (L - mu) + 2/9 in seven classes, chi-square with K = 6.
//
// Berlekamp-Massey here is bit-sliced: 64 blocks run side by side, one per bit of a
// 64-bit word, after a 64x64 bit-matrix transpose of their bits. A polynomial is then
// an array of words indexed by degree, and each step of the algorithm (discrepancy, the
// update C += x^(N-m) B, the length change) is a handful of word operations for all 64
// blocks at once, in branch-free loops the compiler vectorises. About 60x fewer
// operations per block than the reference's bit-per-byte loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sts/special.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// cephes_igamc as the reference calls it: Q(a, x) with Q = 1 for x <= 0.
double reference_igamc(double a, double x) { return x <= 0 ? 1.0 : igamc(a, x); }

// 64 bits of an MSB-first bit array starting at bit `offset` (the array is padded so the
// following word exists).
inline uint64_t bits_at(const uint64_t* words, size_t offset) {
  const size_t q = offset >> 6;
  const unsigned r = static_cast<unsigned>(offset & 63);
  return (words[q] << r) | ((words[q + 1] >> 1) >> (63 - r));
}

// In-place transpose of a 64x64 bit matrix, element (i, j) = bit 63 - j of a[i].
void transpose64(uint64_t a[64]) {
  uint64_t mask = 0x00000000ffffffffull;
  for (unsigned j = 32; j != 0; j >>= 1, mask ^= mask << j) {
    for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
      const uint64_t t = (a[k] ^ (a[k | j] >> j)) & mask;
      a[k] ^= t;
      a[k | j] ^= t << j;
    }
  }
}

// Berlekamp-Massey on up to 64 blocks at once, bit-sliced: lane b (bit 63 - b of every
// word) is block b. A polynomial is an array of words indexed by degree, so every
// operation of the algorithm is the same word operation for all lanes; the lanes differ
// only in their discrepancy d and in whether their length L changes, and both are masks.
// B is kept pre-multiplied, Bs = x^(N-m) B, so the update is C ^= d & Bs and the
// "multiply by x" after each step is a move of Bs's base pointer.
class SlicedBerlekampMassey {
 public:
  explicit SlicedBerlekampMassey(size_t M) : M_(M), seq_(M), c_(M + 2), bs_buf_(2 * M + 4), rejoin_(2 * M + 4) {}

  // Linear complexity of blocks first .. first + count - 1 (count <= 64) of M bits each,
  // read from `words` (MSB-first, padded by two zero words).
  void run(const uint64_t* words, size_t first, size_t count, size_t* complexity) {
    load(words, first, count);
    std::fill(c_.begin(), c_.end(), 0);
    std::fill(bs_buf_.begin(), bs_buf_.end(), 0);
    size_t base = M_ + 1;          // Bs coefficient i lives at bs_buf_[base + i]
    c_[0] = ~uint64_t{0};          // C = 1
    bs_buf_[base + 1] = ~uint64_t{0};  // B = 1, m = -1: Bs = x
    size_t L[64] = {};             // indexed by bit position p (lane 63 - p)
    size_t lmin = 0, lmax = 0;
    // A lane may change its length when 2L <= N (the reference's L <= N/2). `eligible`
    // holds those lanes; a lane whose length becomes L' rejoins it at step 2L', recorded
    // in rejoin_[2L']. So only the lanes that do change are visited one by one.
    uint64_t eligible = ~uint64_t{0};
    std::fill(rejoin_.begin(), rejoin_.end(), 0);
    uint64_t* const c = c_.data();
    for (size_t N = 0; N < M_; ++N) {
      eligible |= rejoin_[N];
      // d_lane = sum_{i=0..L} C_i s_{N-i}; seq_[M-1-j] holds s_j, so s_{N-i} = r[i].
      const uint64_t* const r = seq_.data() + (M_ - 1 - N);
      uint64_t d0 = 0, d1 = 0;
      size_t i = 0;
      for (; i + 1 <= lmax; i += 2) {
        d0 ^= c[i] & r[i];
        d1 ^= c[i + 1] & r[i + 1];
      }
      if (i <= lmax) d0 ^= c[i] & r[i];
      const uint64_t d = d0 ^ d1;
      // Degrees that can be non-zero: C up to L, Bs up to N + 1 - L (per lane).
      const size_t hi = std::max(lmax, N + 1 - lmin);
      const uint64_t grow = d & eligible;
      eligible &= ~grow;
      bool min_grew = false;
      for (uint64_t rest = grow; rest != 0; rest &= rest - 1) {
        const int p = __builtin_ctzll(rest);
        min_grew |= L[p] == lmin;
        const size_t grown = N + 1 - L[p];
        L[p] = grown;
        lmax = std::max(lmax, grown);
        rejoin_[2 * grown] |= uint64_t{1} << p;
      }
      uint64_t* const bs = bs_buf_.data() + base;
      for (size_t k = 0; k <= hi; ++k) {
        const uint64_t old_c = c[k];
        c[k] = old_c ^ (d & bs[k]);
        bs[k] = (grow & old_c) | (~grow & bs[k]);  // on a length change B = old C, m = N
      }
      --base;  // Bs *= x
      bs_buf_[base] = 0;
      if (min_grew) lmin = *std::min_element(L, L + 64);
    }
    for (size_t b = 0; b < count; ++b) complexity[b] = L[63 - b];
  }

 private:
  // seq_[M - 1 - j] = bit j of every block (block b in lane b); lanes past `count`
  // repeat block `first` so that they behave like real data (their results are unused).
  void load(const uint64_t* words, size_t first, size_t count) {
    uint64_t rows[64];
    for (size_t j0 = 0; j0 < M_; j0 += 64) {
      for (size_t b = 0; b < 64; ++b) rows[b] = bits_at(words, (first + (b < count ? b : 0)) * M_ + j0);
      transpose64(rows);
      const size_t take = std::min<size_t>(64, M_ - j0);
      for (size_t t = 0; t < take; ++t) seq_[M_ - 1 - (j0 + t)] = rows[t];
    }
  }

  size_t M_;
  std::vector<uint64_t> seq_, c_, bs_buf_, rejoin_;
};

}  // namespace

TestResult linear_complexity(const Bits& bits, int M) {
  TestResult result;
  if (M < 1) {
    result.p_values.push_back(kNaN);
    result.note = "linear complexity: block length M = " + std::to_string(M) + " must be positive";
    return result;
  }
  const size_t bm = static_cast<size_t>(M);
  const size_t N = bits.n / bm;
  if (N == 0) {
    result.p_values.push_back(kNaN);
    result.note = "linear complexity: n = " + std::to_string(bits.n) + " is shorter than one block of M = " +
                  std::to_string(M) + " bits";
    return result;
  }
  constexpr int K = 6;
  // The reference's class probabilities (its pi[0] = 0.01047 is rounded differently
  // from the paper's 0.010417; matched here).
  static constexpr double kPi[K + 1] = {0.01047, 0.03125, 0.12500, 0.50000, 0.25000, 0.06250, 0.020833};
  // The sequence padded with two zero words for the unaligned 64-bit reads.
  std::vector<uint64_t> padded((bits.n + 63) / 64 + 2, 0);
  std::copy(bits.words.begin(), bits.words.begin() + static_cast<std::ptrdiff_t>((bits.n + 63) / 64), padded.begin());
  SlicedBerlekampMassey bmass(bm);
  size_t complexity[64];

  const int sign_mean = (M + 1) % 2 == 0 ? -1 : 1;
  const double mean = M / 2.0 + (9.0 + sign_mean) / 36.0 - 1.0 / std::pow(2.0, M) * (M / 3.0 + 2.0 / 9.0);
  const int sign_t = M % 2 == 0 ? 1 : -1;
  double nu[K + 1] = {0, 0, 0, 0, 0, 0, 0};
  for (size_t ii = 0; ii < N; ++ii) {
    if (ii % 64 == 0) bmass.run(padded.data(), ii, std::min<size_t>(64, N - ii), complexity);
    const auto L = static_cast<double>(complexity[ii % 64]);
    const double t = sign_t * (L - mean) + 2.0 / 9.0;
    if (t <= -2.5) nu[0]++;
    else if (t <= -1.5) nu[1]++;
    else if (t <= -0.5) nu[2]++;
    else if (t <= 0.5) nu[3]++;
    else if (t <= 1.5) nu[4]++;
    else if (t <= 2.5) nu[5]++;
    else nu[6]++;
  }
  double chi2 = 0.0;
  const auto dN = static_cast<double>(N);
  for (int i = 0; i <= K; ++i) chi2 += std::pow(nu[i] - dN * kPi[i], 2) / (dN * kPi[i]);
  result.p_values.push_back(reference_igamc(K / 2.0, chi2 / 2.0));
  return result;
}

}  // namespace qe::sts
