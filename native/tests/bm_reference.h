// The bit-packed Berlekamp-Massey the pattern check used before issue 30: the
// connection polynomials as words, each discrepancy a dot product with 64-bit slices of
// the reversed sequence. Kept here as an independent reference for the tests.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qe::test {

inline size_t reference_linear_complexity(const uint8_t* data, size_t nbits) {
  if (nbits == 0) return 0;
  const size_t words = nbits / 64 + 2;
  std::vector<uint64_t> rev(2 * words + 2, 0), c(words, 0), b(words, 0), t(words, 0);
  for (size_t k = 0; k < nbits; ++k) {
    const uint64_t bit = (data[k >> 3] >> (7 - (k & 7))) & 1u;
    const size_t j = nbits - 1 - k;  // rev bit j = s_(nbits-1-j)
    rev[j >> 6] |= bit << (j & 63);
  }
  auto slice = [&](size_t pos) {
    const size_t q = pos >> 6;
    const unsigned s = pos & 63;
    return s == 0 ? rev[q] : (rev[q] >> s) | (rev[q + 1] << (64 - s));
  };
  c[0] = b[0] = 1;
  size_t L = 0, m = 1;
  for (size_t n = 0; n < nbits; ++n) {
    const size_t off = nbits - 1 - n;
    const size_t used = L / 64 + 1;
    uint64_t acc = 0;
    for (size_t w = 0; w < used; ++w) acc ^= c[w] & slice(off + 64 * w);
    if ((__builtin_popcountll(acc) & 1) == 0) {
      ++m;
      continue;
    }
    const bool grows = 2 * L <= n;
    if (grows) std::copy(c.begin(), c.end(), t.begin());
    const size_t q = m / 64;
    const unsigned s = m % 64;
    for (size_t w = words; w-- > q;) {
      const uint64_t hi = b[w - q];
      const uint64_t lo = w > q ? b[w - q - 1] : 0;
      c[w] ^= s == 0 ? hi : (hi << s) | (lo >> (64 - s));
    }
    if (grows) {
      L = n + 1 - L;
      b.swap(t);
      m = 1;
    } else {
      ++m;
    }
  }
  return L;
}

}  // namespace qe::test
