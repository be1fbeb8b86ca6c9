// SP 800-22 test 2.9, Maurer's "universal statistical" test, as the reference runs it:
// L chosen from n by the reference's thresholds (L = 6 from n = 387,840 up to L = 16),
// Q = 10 * 2^L initialisation blocks, K = floor(n / L) - Q test blocks, the expected
// values and variances of its table, and c = 0.7 - 0.8/L + (4 + 32/L) K^(-3/L) / 15.
// L-bit blocks are read straight from the words.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sts/special.h"
#include "sts/sts.h"

namespace qe::sts {

TestResult universal(const Bits& bits) {
  static constexpr double kExpected[17] = {0, 0, 0, 0, 0, 0, 5.2177052, 6.1962507, 7.1836656, 8.1764248, 9.1723243,
                                           10.170032, 11.168765, 12.168070, 13.167693, 14.167488, 15.167379};
  static constexpr double kVariance[17] = {0, 0, 0, 0, 0, 0, 2.954, 3.125, 3.238, 3.311, 3.356, 3.384,
                                           3.401, 3.410, 3.416, 3.419, 3.421};
  // n from which each L (6..16) is used: n >= 1010 * 2^L * L, rounded as the reference.
  static constexpr size_t kMinN[17] = {0, 0, 0, 0, 0, 0, 387840, 904960, 2068480, 4654080, 10342400,
                                       22753280, 49643520, 107560960, 231669760, 496435200, 1059061760};
  const size_t n = bits.n;
  int L = 5;
  for (int l = 6; l <= 16; ++l)
    if (n >= kMinN[l]) L = l;
  if (L < 6) {
    return TestResult::not_applicable(1, "n = " + std::to_string(n) + " is too short: Maurer's universal test needs n >= 387,840 bits (L >= 6)");
  }
  const size_t p = size_t{1} << L;
  const size_t Q = 10 * p;
  const size_t K = n / static_cast<size_t>(L) - Q;

  const double Ld = static_cast<double>(L);
  const double Kd = static_cast<double>(K);
  const double c = 0.7 - 0.8 / Ld + (4 + 32 / Ld) * std::pow(Kd, -3 / Ld) / 15;
  const double sigma = c * std::sqrt(kVariance[L] / Kd);

  // Distances below this bound are only counted here; the sum of log2(distance) is
  // formed at the end from the counts (the reference adds log(d)/log(2) block by block;
  // the order of the additions differs, the terms are the same, and the sums agree to
  // ~1e-15 relative).
  const size_t table_size = 64 * p;
  std::vector<uint32_t> distance_count(table_size, 0);
  double far_sum = 0.0;  // distances >= table_size, rare

  std::vector<size_t> last_seen(p, 0);  // 1-based index of the block where a pattern was last seen
  // Consecutive L-bit blocks, read from a 64-bit window that is refilled per word.
  const uint64_t* w = bits.words.data();
  const unsigned Lu = static_cast<unsigned>(L);
  size_t next_word = 0;
  uint64_t window = 0;  // unread bits, MSB first
  unsigned avail = 0;   // number of them
  auto next_block = [&]() -> size_t {
    if (avail >= Lu) {
      const size_t v = static_cast<size_t>(window >> (64 - Lu));
      window <<= Lu;
      avail -= Lu;
      return v;
    }
    const uint64_t fresh = w[next_word++];  // in range: blocks never pass bit n
    const unsigned need = Lu - avail;
    const size_t v = static_cast<size_t>(((avail ? window >> (64 - avail) : 0) << need) | (fresh >> (64 - need)));
    window = need == 64 ? 0 : fresh << need;
    avail = 64 - need;
    return v;
  };
  for (size_t i = 1; i <= Q; ++i) last_seen[next_block()] = i;
  for (size_t i = Q + 1; i <= Q + K; ++i) {
    const size_t pattern = next_block();
    const size_t distance = i - last_seen[pattern];
    if (distance < table_size) {
      ++distance_count[distance];
    } else {
      far_sum += std::log(static_cast<double>(distance)) / std::log(2.0);
    }
    last_seen[pattern] = i;
  }
  double sum = far_sum;
  for (size_t d = 1; d < table_size; ++d) {
    if (distance_count[d] != 0) sum += static_cast<double>(distance_count[d]) * (std::log(static_cast<double>(d)) / std::log(2.0));
  }
  const double phi = sum / Kd;
  const double arg = std::fabs(phi - kExpected[L]) / (std::sqrt(2.0) * sigma);
  return TestResult{{erfc(arg)}, {}};
}

}  // namespace qe::sts
