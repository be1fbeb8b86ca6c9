// Reading a data set the way NIST's tool does: infer or check the symbol width, translate
// the symbols present down to 0..k-1 and expand the raw symbols into a bitstring.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "common/cpu.h"  // QE_POPCNT_CLONES
#include "ea/ea.h"

namespace qe::ea {

namespace {

// Width of the widest symbol: position of the highest bit set in any sample (0 for all-zero data).
int data_width(const uint8_t* data, size_t n) {
  uint8_t seen = 0;
  for (size_t i = 0; i < n; ++i) seen |= data[i];
  int width = 0;
  while (width < 8 && (seen >> width) != 0) ++width;
  return width;
}

}  // namespace

Samples prepare(const uint8_t* data, size_t n, int bits_per_symbol) {
  if (n == 0) throw InputError("the data is empty");
  if (bits_per_symbol < 0 || bits_per_symbol > 8)
    throw InputError("bits per symbol must be between 1 and 8, not " + std::to_string(bits_per_symbol));
  const int width = data_width(data, n);
  if (bits_per_symbol == 0) {
    bits_per_symbol = width;
    if (bits_per_symbol == 0) throw InputError("every sample is 0: a single symbol carries no entropy");
  } else if (width > bits_per_symbol) {
    throw InputError("samples are " + std::to_string(width) + " bits wide, wider than the " +
                     std::to_string(bits_per_symbol) + " bits per symbol given");
  }
  Samples s;
  s.bits_per_symbol = bits_per_symbol;
  s.raw.assign(data, data + n);
  std::array<int, 256> code{};
  for (uint8_t v : s.raw) code[v] = 1;
  int k = 0;
  for (int& c : code) c = c ? k++ : 0;
  s.alphabet_size = k;
  if (k <= 1) throw InputError("every sample is the same symbol: a single symbol carries no entropy");
  s.symbols.resize(n);
  for (size_t i = 0; i < n; ++i) s.symbols[i] = static_cast<uint8_t>(code[s.raw[i]]);
  return s;
}

namespace {

// spread[v]: the 8 bits of v as 8 bytes, most significant bit in the first byte (memory
// order), so one 8-byte store writes a symbol's bits and the next symbol starts
// bits_per_symbol bytes on.
const std::array<uint64_t, 256>& byte_spread() {
  static const std::array<uint64_t, 256> spread = [] {
    std::array<uint64_t, 256> t{};
    for (size_t v = 0; v < 256; ++v) {
      uint8_t bytes[8];
      for (int j = 0; j < 8; ++j) bytes[j] = static_cast<uint8_t>((v >> (7 - j)) & 1);
      std::memcpy(&t[v], bytes, 8);
    }
    return t;
  }();
  return spread;
}

}  // namespace

PopulatedVector<uint8_t> bitstring(const Samples& s, size_t bits) {
  const auto k = static_cast<size_t>(s.bits_per_symbol);
  const size_t whole = std::min(bits, s.bit_count()) / k;  // samples written in full
  const int align = 8 - s.bits_per_symbol;                 // the symbol's top bit to bit 7
  const std::array<uint64_t, 256>& spread = byte_spread();
  PopulatedVector<uint8_t> out(whole * k + 8);  // room for the last 8-byte store
  uint8_t* at = out.data();
  for (size_t i = 0; i < whole; ++i, at += k) std::memcpy(at, &spread[static_cast<uint8_t>(s.raw[i] << align)], 8);
  out.resize(whole * k);
  if (whole < s.raw.size())
    for (size_t j = 0; out.size() < bits; ++j) out.push_back(static_cast<uint8_t>((s.raw[whole] >> (k - 1 - j)) & 1));
  return out;
}

QE_POPCNT_CLONES size_t bitstring_ones(const Samples& s, size_t bits) {
  const auto k = static_cast<size_t>(s.bits_per_symbol);
  const size_t whole = std::min(bits, s.bit_count()) / k;
  size_t ones = 0;
  for (size_t i = 0; i < whole; ++i) ones += static_cast<size_t>(std::popcount(s.raw[i]));
  const size_t rest = std::min(bits, s.bit_count()) - whole * k;  // the top bits of one more sample
  if (rest > 0) ones += static_cast<size_t>(std::popcount(static_cast<uint8_t>(s.raw[whole] >> (k - rest))));
  return ones;
}

}  // namespace qe::ea
