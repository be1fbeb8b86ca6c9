// Compression estimate (§6.3.4): Maurer's universal statistic over 6-bit blocks, then the
// p whose expected statistic matches the lower confidence bound of the observed one.
#include <cmath>
#include <vector>

#include "ea/ea.h"
#include "ea/search.h"

namespace qe::ea {

namespace {

constexpr int kBlockBits = 6;
constexpr int kBlockValues = 1 << kBlockBits;
constexpr long kDictionaryBlocks = 1000;

// G(z) of §6.3.4 step 7: the expected log2 distance to the previous occurrence of a block
// whose probability is z, averaged over the test blocks. The double sum collapses to single
// sums over a_i = log2(i) (1-z)^(i-1):
//   G(z) = z/v * ( z * sum_{i=2}^{nb-1} (nb - max(i, d)) a_i  +  sum_{i=d+1}^{nb} a_i ).
// The terms shrink geometrically; once they underflow the rest cannot change the sum.
double expected_statistic(double z, long d, long nb, const PopulatedVector<double>& log2_of) {
  const long double b = 1.0L - static_cast<long double>(z);
  long double power = b;  // (1-z)^(i-1) at i = 2
  long double weighted = 0, tail = 0;
  for (long i = 2; i <= nb; ++i) {
    const long double a = static_cast<long double>(log2_of[static_cast<size_t>(i)]) * power;
    if (i < nb) weighted += static_cast<long double>(nb - (i > d ? i : d)) * a;
    if (i > d) tail += a;
    power *= b;
    if (power < 1e-300L) break;
  }
  const long v = nb - d;
  return static_cast<double>(static_cast<long double>(z) / v * (static_cast<long double>(z) * weighted + tail));
}

}  // namespace

double compression_estimate(const uint8_t* bits, size_t n) {
  const long nb = static_cast<long>(n / kBlockBits);
  if (nb <= kDictionaryBlocks) return kNotApplicable;
  auto block = [bits](long i) {
    unsigned v = 0;
    for (int j = 0; j < kBlockBits; ++j) v = (v << 1) | (bits[i * kBlockBits + j] & 1u);
    return v;
  };
  PopulatedVector<double> log2_of(static_cast<size_t>(nb) + 1, 0.0);  // ~10 MB for 8 x 10^6 bits
  for (size_t i = 1; i < log2_of.size(); ++i) log2_of[i] = std::log2(static_cast<double>(i));
  // dict[b] = 1-based index of the last block with value b (0 = not seen).
  long dict[kBlockValues] = {};
  for (long i = 0; i < kDictionaryBlocks; ++i) dict[block(i)] = i + 1;
  long double sum = 0, sum_squares = 0;
  for (long i = kDictionaryBlocks; i < nb; ++i) {
    const unsigned b = block(i);
    const double l = log2_of[static_cast<size_t>(i + 1 - dict[b])];
    sum += l;
    sum_squares += static_cast<long double>(l) * l;
    dict[b] = i + 1;
  }
  const long v = nb - kDictionaryBlocks;
  const double mean = static_cast<double>(sum / v);
  const double sigma = 0.5907 * std::sqrt(static_cast<double>(sum_squares / (v - 1.0L)) - mean * mean);
  const double bound = mean - detail::kZAlpha * sigma / std::sqrt(static_cast<double>(v));
  auto expected = [&](double p) {
    const double q = (1.0 - p) / (kBlockValues - 1.0);
    return expected_statistic(p, kDictionaryBlocks, nb, log2_of) +
           (kBlockValues - 1.0) * expected_statistic(q, kDictionaryBlocks, nb, log2_of);
  };
  const double uniform = 1.0 / kBlockValues;
  double p = -1.0;
  if (expected(uniform) > bound) p = detail::bisect_decreasing(expected, bound, uniform, 1.0, uniform);
  if (p > uniform) return -std::log2(p) / kBlockBits;
  return 1.0;
}

}  // namespace qe::ea
