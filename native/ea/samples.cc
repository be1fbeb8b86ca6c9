// Reading a data set the way NIST's tool does: infer or check the symbol width, translate
// the symbols present down to 0..k-1 and expand the raw symbols into a bitstring.
#include <array>
#include <string>

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
  s.bits.resize(n * static_cast<size_t>(bits_per_symbol));
  uint8_t* out = s.bits.data();
  for (size_t i = 0; i < n; ++i)
    for (int j = bits_per_symbol - 1; j >= 0; --j) *out++ = static_cast<uint8_t>((s.raw[i] >> j) & 1);
  return s;
}

}  // namespace qe::ea
