// Word-level helpers shared by the bit-counting tests (internal to native/sts).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/cpu.h"  // QE_POPCNT_CLONES
#include "common/msb_bits.h"
#include "sts/sts.h"


namespace qe::sts::detail {

// The 64 bits starting at bit `offset` (MSB first); bits past the end of `words` read as 0.
using msb_bits::bits_at;

// Mask of the first `len` bits of a word (MSB side), 0 <= len <= 64.
inline uint64_t leading_mask(unsigned len) { return len == 0 ? 0 : ~uint64_t{0} << (64 - len); }

// Number of ones among bits [start, start + count) of `bits`.
size_t count_ones(const Bits& bits, size_t start, size_t count);

}  // namespace qe::sts::detail
