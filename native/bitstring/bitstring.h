// Packed bits -> '0'/'1' characters, for the quality APIs' `random` field (product.md §5.3).
// Bit order is NIST's and the pool's: the most significant bit of each byte comes first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qe::bitstring {

// Writes the first `nbits` bits of `in` as `nbits` characters '0'/'1' to `out`.
// `in` must hold at least ceil(nbits / 8) bytes and `out` at least `nbits` bytes.
void expand_bits(const uint8_t* in, size_t nbits, char* out) noexcept;

// Reverse of expand_bits: packs `nchars` characters '0'/'1' into ceil(nchars / 8) bytes
// (unused low bits of the last byte are zero). Returns false, leaving `out` unspecified,
// when a character is neither '0' nor '1'.
bool pack_bits(const char* in, size_t nchars, uint8_t* out) noexcept;

}  // namespace qe::bitstring
