#include "ea/shuffle.h"

#include <utility>

namespace qe::ea {
namespace {

__extension__ typedef unsigned __int128 uint128;  // GCC/Clang: the 64x64->128 product

// Uniform in [0, bound) for bound ≤ 2^32, from the 32 random bits in `bits` (more drawn from
// rng in the rare case of a rejection): the high half of bits x bound, rejecting the draws
// whose low half falls under 2^32 mod bound.
inline uint32_t below32(uint32_t bits, uint64_t bound, Xoshiro& rng) {
  uint64_t m = bits * bound;
  if (static_cast<uint32_t>(m) < bound) {
    const auto threshold = static_cast<uint32_t>((uint64_t{1} << 32) % bound);
    while (static_cast<uint32_t>(m) < threshold) m = (rng.next() >> 32) * bound;
  }
  return static_cast<uint32_t>(m >> 32);
}

// The same for bounds past 2^32, with full-width draws.
uint64_t below64(uint64_t bound, Xoshiro& rng) {
  uint128 m = static_cast<uint128>(rng.next()) * bound;
  if (static_cast<uint64_t>(m) < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (static_cast<uint64_t>(m) < threshold) m = static_cast<uint128>(rng.next()) * bound;
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace

void shuffle(std::vector<uint8_t>& data, Xoshiro& rng) {
  uint8_t* a = data.data();
  size_t i = data.size();
  for (; i > (uint64_t{1} << 32); --i) std::swap(a[i - 1], a[below64(i, rng)]);
  // Position i - 1 swaps with one drawn from [0, i), two positions per generator call.
  while (i > 2) {
    const uint64_t r = rng.next();
    std::swap(a[i - 1], a[below32(static_cast<uint32_t>(r), i, rng)]);
    --i;
    std::swap(a[i - 1], a[below32(static_cast<uint32_t>(r >> 32), i, rng)]);
    --i;
  }
  if (i == 2) std::swap(a[1], a[below32(static_cast<uint32_t>(rng.next()), 2, rng)]);
}

}  // namespace qe::ea
