#include "bitstring/bitstring.h"

#include <array>
#include <cstring>

namespace qe::bitstring {
namespace {

// For each byte value, its eight characters in output order (MSB first).
constexpr std::array<std::array<char, 8>, 256> make_table() {
  std::array<std::array<char, 8>, 256> t{};
  for (unsigned v = 0; v < 256; ++v) {
    for (unsigned b = 0; b < 8; ++b) t[v][b] = ((v >> (7 - b)) & 1U) ? '1' : '0';
  }
  return t;
}

constexpr auto kTable = make_table();

}  // namespace

void expand_bits(const uint8_t* in, size_t nbits, char* out) noexcept {
  const size_t whole = nbits / 8;
  // One 8-byte copy per input byte: the compiler turns it into a single load and store.
  for (size_t i = 0; i < whole; ++i) std::memcpy(out + 8 * i, kTable[in[i]].data(), 8);
  const size_t rest = nbits % 8;
  if (rest != 0) std::memcpy(out + 8 * whole, kTable[in[whole]].data(), rest);
}

bool pack_bits(const char* in, size_t nchars, uint8_t* out) noexcept {
  const size_t nbytes = (nchars + 7) / 8;
  for (size_t i = 0; i < nbytes; ++i) {
    unsigned v = 0;
    for (size_t b = 0; b < 8; ++b) {
      const size_t k = 8 * i + b;
      unsigned bit = 0;
      if (k < nchars) {
        const char c = in[k];
        if (c != '0' && c != '1') return false;
        bit = c == '1' ? 1U : 0U;
      }
      v = (v << 1) | bit;
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace qe::bitstring
