// 64-bit windows of an MSB-first bit stream (bit i is the most significant bit first, as
// NIST's tools and the entropy pool read bytes), held as 64-bit words or as bytes. Bits
// past the end read as 0. Shared by the STS tests, the battery's byte input and the
// bit-sliced Berlekamp-Massey.
//
// Header-only and inline: a file that compiles its own code for a wider target includes
// this before its `#pragma GCC target`, so these stay built for the default target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qe::msb_bits {

// Big-endian 64-bit load of bytes [i, i + 8) where only bytes below `nbytes` exist.
inline uint64_t load_be(const uint8_t* bytes, size_t nbytes, size_t i) {
  if (i + 8 <= nbytes) {
    uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    return __builtin_bswap64(w);
  }
  uint64_t w = 0;
  for (size_t k = 0; k < 8; ++k) w = (w << 8) | (i + k < nbytes ? bytes[i + k] : 0u);
  return w;
}

// The 64 bits from bit `offset` of `nwords` words (bit i is bit 63 - i % 64 of word i / 64).
inline uint64_t bits_at(const uint64_t* words, size_t nwords, size_t offset) {
  const size_t w = offset >> 6;
  const unsigned s = offset & 63;
  const uint64_t hi = w < nwords ? words[w] : 0;
  if (s == 0) return hi;
  const uint64_t lo = w + 1 < nwords ? words[w + 1] : 0;
  return (hi << s) | (lo >> (64 - s));
}

// The 64 bits from bit `offset` of `nbytes` bytes (bit i is bit 7 - i % 8 of byte i / 8).
inline uint64_t bits_at(const uint8_t* bytes, size_t nbytes, size_t offset) {
  const size_t byte = offset >> 3;
  const unsigned s = offset & 7;
  const uint64_t hi = load_be(bytes, nbytes, byte);
  if (s == 0) return hi;
  const uint64_t next = byte + 8 < nbytes ? bytes[byte + 8] : 0;
  return (hi << s) | (next >> (8 - s));
}

}  // namespace qe::msb_bits
