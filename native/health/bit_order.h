// The health tests read bits most significant first within each byte (as SP 800-22, rngd
// and the FIPS 140-2 tests do); their word-parallel code wants sequence bit i at bit
// i % 64 of word i / 64. One helper converts, shared by Berlekamp-Massey and FIPS 140-2.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qe::health {

// Reverses the bits of each byte of a little-endian word.
inline uint64_t reverse_bits_in_bytes(uint64_t v) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
  return v;
}

// Word w of the sequence in `bytes` (nbytes long; zero past the end), LSB-first bit order.
inline uint64_t sequence_word(const uint8_t* bytes, size_t nbytes, size_t w) {
  uint8_t b[8] = {};
  std::memcpy(b, bytes + 8 * w, std::min<size_t>(8, nbytes - 8 * w));
  uint64_t v;
  std::memcpy(&v, b, 8);
  return reverse_bits_in_bytes(v);
}

}  // namespace qe::health
