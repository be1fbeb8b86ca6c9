// Word-level helpers shared by the bit-counting tests (internal to native/sts).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/cpu.h"  // QE_POPCNT_CLONES
#include "sts/sts.h"


namespace qe::sts::detail {

// The 64 bits starting at bit `offset` (MSB first); bits past the end of `words` read as 0.
inline uint64_t bits_at(const uint64_t* words, size_t nwords, size_t offset) {
  const size_t w = offset >> 6;
  const unsigned s = offset & 63;
  const uint64_t hi = w < nwords ? words[w] : 0;
  if (s == 0) return hi;
  const uint64_t lo = w + 1 < nwords ? words[w + 1] : 0;
  return (hi << s) | (lo >> (64 - s));
}

// Mask of the first `len` bits of a word (MSB side), 0 <= len <= 64.
inline uint64_t leading_mask(unsigned len) { return len == 0 ? 0 : ~uint64_t{0} << (64 - len); }

// Number of ones among bits [start, start + count) of `bits`.
size_t count_ones(const Bits& bits, size_t start, size_t count);

}  // namespace qe::sts::detail
