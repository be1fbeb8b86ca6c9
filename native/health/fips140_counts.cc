#include "health/fips140_counts.h"

#include <bit>

#include "common/cpu.h"
#include "common/msb_bits.h"

namespace qe::fips140::detail {

QE_POPCNT_CLONES void count_words(const uint8_t* padded, Counts& out) {
  // Nibbles by a byte histogram: 2,500 increments instead of 5,000, in four tables so that
  // consecutive bytes do not wait on each other's increments.
  uint32_t h[4][256] = {};
  for (size_t i = 0; i < 2500; i += 4)
    for (size_t t = 0; t < 4; ++t) ++h[t][padded[i + t]];
  out.nibbles.fill(0);
  for (size_t b = 0; b < 256; ++b) {
    const uint32_t n = h[0][b] + h[1][b] + h[2][b] + h[3][b];
    out.nibbles[b >> 4] += n;
    out.nibbles[b & 15] += n;
  }

  uint64_t seq[kDataWords + 1];
  for (size_t w = 0; w <= kDataWords; ++w) seq[w] = msb_bits::load_be(padded, kPaddedBytes, 8 * w);
  for (int v = 0; v < 2; ++v) {
    auto word = [&](size_t w) { return v ? seq[w] : ~seq[w] & kValidBits[w]; };
    std::array<uint64_t, 8> windows{};
    std::array<uint64_t, kDeep + 1> any{};  // k > 7: OR of the positions starting k bits equal to v
    out.nonzero_deep[v].fill(0);
    for (size_t w = 0; w < kDataWords; ++w) {
      const uint64_t x0 = word(w), x1 = word(w + 1);
      uint64_t a = x0;  // bit j: bits j .. j+k-1 of the sequence from here all equal v
      windows[1] += static_cast<uint64_t>(std::popcount(a));
      for (unsigned k = 1; k < 7; ++k) {
        a &= (x0 << k) | (x1 >> (64 - k));
        windows[k + 1] += static_cast<uint64_t>(std::popcount(a));
      }
      for (unsigned k = 7; k < kDeep; ++k) {
        a &= (x0 << k) | (x1 >> (64 - k));
        any[k + 1] |= a;
      }
      out.deep[v][w] = a;
      out.nonzero_deep[v][w / 8] |= static_cast<uint8_t>((a != 0 ? 1u : 0u) << (w % 8));
    }
    for (size_t w = kDataWords; w < kVectorWords; ++w) out.deep[v][w] = 0;
    for (size_t k = 0; k < 8; ++k) out.windows[v][k] = static_cast<uint32_t>(windows[k]);
    for (size_t k = 8; k <= kDeep; ++k) out.longer[v][k - 8] = any[k] != 0;
  }
}

}  // namespace qe::fips140::detail
