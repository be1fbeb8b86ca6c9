// SP 800-22 tests 2.1 (frequency), 2.2 (block frequency), 2.3 (runs), 2.4 (longest run
// of ones in a block) and 2.13 (cumulative sums), computed on 64-bit words and matched
// to the arithmetic of the NIST reference implementation sts-2.1.2 (see docs/sts.md).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "sts/bitwords.h"
#include "sts/special.h"
#include "sts/sts.h"

namespace qe::sts {
namespace detail {

QE_POPCNT_CLONES
size_t count_ones(const Bits& bits, size_t start, size_t count) {
  if (count == 0) return 0;
  const uint64_t* w = bits.words.data();
  const size_t end = start + count;  // exclusive
  const size_t first = start >> 6;
  const size_t last = (end - 1) >> 6;
  const uint64_t head_mask = ~uint64_t{0} >> (start & 63);
  const uint64_t tail_mask = leading_mask(static_cast<unsigned>(((end - 1) & 63) + 1));
  if (first == last) return static_cast<size_t>(std::popcount(w[first] & head_mask & tail_mask));
  size_t ones = static_cast<size_t>(std::popcount(w[first] & head_mask));
  for (size_t i = first + 1; i < last; ++i) ones += static_cast<size_t>(std::popcount(w[i]));
  return ones + static_cast<size_t>(std::popcount(w[last] & tail_mask));
}

}  // namespace detail

namespace {

TestResult empty_sequence(size_t count) { return TestResult::not_applicable(count, "empty sequence (n = 0)"); }

// Number of positions k in [1, n) with bit k != bit k-1: each word is XORed with itself
// shifted left by one (the next word's first bit shifted in), which sets bit p exactly
// when positions p and p+1 differ.
QE_POPCNT_CLONES
size_t count_transitions(const Bits& bits) {
  const size_t n = bits.n;
  if (n < 2) return 0;
  const uint64_t* w = bits.words.data();
  const size_t nwords = (n + 63) / 64;
  size_t transitions = 0;
  for (size_t i = 0; i + 1 < nwords; ++i) {
    transitions += static_cast<size_t>(std::popcount(w[i] ^ ((w[i] << 1) | (w[i + 1] >> 63))));
  }
  // Last word: compare only pairs (p, p+1) with p + 1 < n, i.e. the first valid - 1 bits.
  const unsigned valid = static_cast<unsigned>(n - (nwords - 1) * 64);
  const uint64_t last = w[nwords - 1];
  transitions += static_cast<size_t>(std::popcount((last ^ (last << 1)) & detail::leading_mask(valid - 1)));
  return transitions;
}

// Whether x (MSB first) holds a run of at least t ones (1 <= t <= 64), as the mask of
// the positions where such runs start. z_L = bits p with p .. p+L-1 all ones, and
// z_L & (z_L << s) = z_(L+s) for s <= L, so six steps reach any t <= 64; the shift
// sequence of each t is tabulated (padded with no-op zero shifts) so there is no branch.
struct RunShifts {
  uint8_t s[6];
};

constexpr std::array<RunShifts, 65> make_run_shifts() {
  std::array<RunShifts, 65> table{};
  for (unsigned t = 1; t <= 64; ++t) {
    unsigned len = 1;
    for (int step = 0; step < 6; ++step) {
      const unsigned sh = len < t ? std::min(len, t - len) : 0;
      table[t].s[step] = static_cast<uint8_t>(sh);
      len += sh;
    }
  }
  return table;
}

constexpr std::array<RunShifts, 65> kRunShifts = make_run_shifts();

inline uint64_t run_starts_at_least(uint64_t x, unsigned t) {
  const RunShifts& sh = kRunShifts[t];
  uint64_t z = x;
  for (int step = 0; step < 6; ++step) z &= z << sh.s[step];
  return z;
}

// Longest run of ones in bits [start, start + count), capped at `cap` (the classes of
// the test only need min(run, V[K])). Walked 64 bits at a time: a run inside one chunk
// is found from the run-start masks above, which are only refined bit by bit when the
// chunk beats the best so far (rare once a few chunks have been seen); a run across
// chunks is the trailing ones of one chunk plus the leading ones of the next.
unsigned longest_run_in(const Bits& bits, size_t start, size_t count, unsigned cap) {
  const uint64_t* w = bits.words.data();
  const size_t nwords = bits.words.size();
  unsigned best = 0;
  unsigned carry = 0;  // ones at the end of the chunks seen so far
  for (size_t done = 0; done < count && best < cap; done += 64) {
    const unsigned len = static_cast<unsigned>(std::min<size_t>(64, count - done));
    const uint64_t x = detail::bits_at(w, nwords, start + done) & detail::leading_mask(len);
    const unsigned lead = static_cast<unsigned>(std::countl_one(x));
    if (lead >= len) {  // all ones
      carry += len;
      best = std::max(best, carry);
      continue;
    }
    best = std::max(best, carry + lead);
    uint64_t z = run_starts_at_least(x, std::min(best + 1, 64u));
    if (z != 0) {  // this chunk has a longer run: extend one bit at a time
      unsigned run = best + 1;
      while ((z &= z << 1) != 0) ++run;
      best = run;
    }
    carry = static_cast<unsigned>(std::countr_one(x >> (64 - len)));
  }
  return std::min(best, cap);
}

// Max and min of the +-1 walk over one byte (MSB first), over its 8 prefix sums.
struct ByteWalk {
  int8_t delta;
  int8_t max_prefix;
  int8_t min_prefix;
};

constexpr std::array<ByteWalk, 256> make_byte_walks() {
  std::array<ByteWalk, 256> table{};
  for (int b = 0; b < 256; ++b) {
    int s = 0;
    int hi = -8;
    int lo = 8;
    for (int bit = 7; bit >= 0; --bit) {
      s += ((b >> bit) & 1) ? 1 : -1;
      hi = std::max(hi, s);
      lo = std::min(lo, s);
    }
    table[static_cast<size_t>(b)] = ByteWalk{static_cast<int8_t>(s), static_cast<int8_t>(hi), static_cast<int8_t>(lo)};
  }
  return table;
}

constexpr std::array<ByteWalk, 256> kByteWalks = make_byte_walks();

struct CusumWalk {
  int64_t sup = 0;  // max(0, max_k S_k), as the reference starts its running max at 0
  int64_t inf = 0;  // min(0, min_k S_k)
  int64_t end = 0;  // S_n
};

// The +-1 walk S_1..S_n, a word at a time: popcount gives the word's net step, and only
// a word that could reach past the running max (s + ones > sup) or min (s - zeros < inf)
// is walked byte by byte with the (delta, max, min) table. A random walk spends most of
// its time well inside its range, so most words take the fast path.
QE_POPCNT_CLONES
CusumWalk cusum_walk(const Bits& bits) {
  const size_t n = bits.n;
  const uint64_t* w = bits.words.data();
  int64_t s = 0;
  int64_t sup = 0;
  int64_t inf = 0;
  const size_t full_words = n / 64;
  for (size_t i = 0; i < full_words; ++i) {
    const uint64_t word = w[i];
    const int64_t ones = std::popcount(word);
    if (s + ones > sup || s - (64 - ones) < inf) {
      for (int shift = 56; shift >= 0; shift -= 8) {
        const ByteWalk& b = kByteWalks[(word >> shift) & 0xff];
        sup = std::max<int64_t>(sup, s + b.max_prefix);
        inf = std::min<int64_t>(inf, s + b.min_prefix);
        s += b.delta;
      }
    } else {
      s += 2 * ones - 64;
    }
  }
  for (size_t k = full_words * 64; k < n; ++k) {
    s += bits.bit(k) ? 1 : -1;
    sup = std::max(sup, s);
    inf = std::min(inf, s);
  }
  return CusumWalk{sup, inf, s};
}

// The reference's P-value for a maximal excursion z of the walk (same formula forward
// and backward; the k bounds use C integer division, which truncates toward zero - the
// paper writes floor(), which differs for negative bounds; we follow the reference).
double cusum_p_value(int64_t n, int64_t z) {
  const double sqrt_n = std::sqrt(static_cast<double>(n));
  // Terms whose normal arguments are beyond +-40 are exactly 0 - 0 or 1 - 1 in double;
  // skipping them keeps degenerate sequences (z = 1, ~n/4 terms) fast.
  const int64_t k_limit = static_cast<int64_t>(40.0 * sqrt_n / static_cast<double>(z)) + 2;
  auto term = [&](int64_t k, int64_t c) { return normal_cdf(static_cast<double>((4 * k + c) * z) / sqrt_n); };
  double sum1 = 0.0;
  for (int64_t k = std::max((-n / z + 1) / 4, -k_limit); k <= std::min((n / z - 1) / 4, k_limit); ++k) {
    sum1 += term(k, 1);
    sum1 -= term(k, -1);
  }
  double sum2 = 0.0;
  for (int64_t k = std::max((-n / z - 3) / 4, -k_limit); k <= std::min((n / z - 1) / 4, k_limit); ++k) {
    sum2 += term(k, 3);
    sum2 -= term(k, 1);
  }
  return 1.0 - sum1 + sum2;
}

}  // namespace

TestResult frequency(const Bits& bits) {
  const size_t n = bits.n;
  if (n == 0) return empty_sequence(1);
  const double ones = static_cast<double>(detail::count_ones(bits, 0, n));
  const double sum = 2.0 * ones - static_cast<double>(n);
  const double s_obs = std::fabs(sum) / std::sqrt(static_cast<double>(n));
  return TestResult{{erfc(s_obs / std::sqrt(2.0))}, {}};
}

TestResult block_frequency(const Bits& bits, int M) {
  if (M <= 0) throw std::invalid_argument("block_frequency: block length M must be positive, got " + std::to_string(M));
  const size_t n = bits.n;
  const size_t block = static_cast<size_t>(M);
  const size_t N = n / block;
  if (N == 0) {
    return TestResult::not_applicable(1, "n = " + std::to_string(n) + " is shorter than one block of M = " + std::to_string(M) + " bits");
  }
  // As the reference: sum of (ones/M - 1/2)^2, chi^2 = 4 M sum.
  double sum = 0.0;
  for (size_t i = 0; i < N; ++i) {
    const double pi = static_cast<double>(detail::count_ones(bits, i * block, block)) / static_cast<double>(M);
    const double v = pi - 0.5;
    sum += v * v;
  }
  const double chi_squared = 4.0 * static_cast<double>(M) * sum;
  return TestResult{{igamc(static_cast<double>(N) / 2.0, chi_squared / 2.0)}, {}};
}

TestResult runs(const Bits& bits) {
  const size_t n = bits.n;
  if (n == 0) return empty_sequence(1);
  const double nd = static_cast<double>(n);
  const double pi = static_cast<double>(detail::count_ones(bits, 0, n)) / nd;
  // Frequency prerequisite (the reference uses a strict '>' against 2/sqrt(n)); when it
  // fails the reference reports P = 0.0, which counts as a failure.
  if (std::fabs(pi - 0.5) > 2.0 / std::sqrt(nd)) {
    return TestResult{{0.0}, "frequency prerequisite not met: |pi - 1/2| = " + std::to_string(std::fabs(pi - 0.5)) +
                                 " > 2/sqrt(n); P-value set to 0 as NIST does"};
  }
  const double v_obs = 1.0 + static_cast<double>(count_transitions(bits));
  const double arg = std::fabs(v_obs - 2.0 * nd * pi * (1 - pi)) / (2.0 * pi * (1 - pi) * std::sqrt(2 * nd));
  return TestResult{{erfc(arg)}, {}};
}

TestResult longest_run(const Bits& bits) {
  const size_t n = bits.n;
  if (n < 128) {
    return TestResult::not_applicable(1, "n = " + std::to_string(n) + " is too short: the longest-run test needs at least 128 bits");
  }
  // The reference's table of block length M, classes V[0..K] and probabilities by n.
  struct Setting {
    int K;
    size_t M;
    int v0;
    double pi[7];
  };
  static constexpr Setting kSmall{3, 8, 1, {0.21484375, 0.3671875, 0.23046875, 0.1875}};
  static constexpr Setting kMedium{5, 128, 4, {0.1174035788, 0.242955959, 0.249363483, 0.17517706, 0.102701071, 0.112398847}};
  static constexpr Setting kLarge{6, 10000, 10, {0.0882, 0.2092, 0.2483, 0.1933, 0.1208, 0.0675, 0.0727}};
  const Setting& s = n < 6272 ? kSmall : n < 750000 ? kMedium : kLarge;

  const size_t N = n / s.M;
  unsigned nu[7] = {0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < N; ++i) {
    const int run = static_cast<int>(longest_run_in(bits, i * s.M, s.M, static_cast<unsigned>(s.v0 + s.K)));
    const int cls = std::clamp(run - s.v0, 0, s.K);  // <= V[0] -> 0, >= V[K] -> K
    ++nu[cls];
  }
  double chi2 = 0.0;
  const double Nd = static_cast<double>(N);
  for (int i = 0; i <= s.K; ++i) {
    const double d = static_cast<double>(nu[i]) - Nd * s.pi[i];
    chi2 += d * d / (Nd * s.pi[i]);
  }
  return TestResult{{igamc(static_cast<double>(s.K) / 2.0, chi2 / 2.0)}, {}};
}

TestResult cumulative_sums(const Bits& bits) {
  const size_t n = bits.n;
  if (n == 0) return empty_sequence(2);
  const CusumWalk walk = cusum_walk(bits);
  const int64_t z_forward = std::max(walk.sup, -walk.inf);
  const int64_t z_backward = std::max(walk.sup - walk.end, walk.end - walk.inf);  // max |S_n - S_k|, k = 0..n
  const int64_t nn = static_cast<int64_t>(n);
  return TestResult{{cusum_p_value(nn, z_forward), cusum_p_value(nn, z_backward)}, {}};
}

}  // namespace qe::sts
