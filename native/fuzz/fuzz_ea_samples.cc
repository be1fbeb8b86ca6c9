// libFuzzer target for the SP 800-90B sample reader (`qentropy ea`): prepare() with an
// inferred or a given width, the bitstring, and — when there are enough samples for the
// tool to accept them — the non-IID track and the IID track's statistics on the data.
//
// Properties checked, beyond "no crash, no sanitizer report":
//  * prepare accepts the data exactly when it is non-empty, holds two or more symbols and
//    no symbol is wider than the width given (otherwise it throws InputError);
//  * the symbols are the raw values renumbered 0..k-1 in ascending order;
//  * bitstring() holds each raw value's bits, most significant first, and bitstring_ones
//    counts its ones.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "ea/ea.h"
#include "fuzz/require.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int width_given = data[0] % 10;  // 0 = infer; 9 is out of range
  const uint8_t* samples = data + 1;
  const size_t n = size - 1;

  uint8_t seen = 0;
  std::array<bool, 256> present{};
  for (size_t i = 0; i < n; ++i) {
    seen |= samples[i];
    present[samples[i]] = true;
  }
  int width = 0;
  while (width < 8 && (seen >> width) != 0) ++width;
  int distinct = 0;
  for (bool p : present) distinct += p;
  const bool acceptable = n > 0 && width_given <= 8 && distinct >= 2 && (width_given == 0 || width <= width_given);

  qe::ea::Samples s;
  try {
    s = qe::ea::prepare(samples, n, width_given);
  } catch (const qe::ea::InputError&) {
    REQUIRE(!acceptable);
    return 0;
  }
  REQUIRE(acceptable);
  REQUIRE(s.bits_per_symbol == (width_given == 0 ? width : width_given));
  REQUIRE(s.alphabet_size == distinct);
  REQUIRE(s.raw.size() == n && s.symbols.size() == n);
  std::array<int, 256> rank{};
  for (int v = 0, k = 0; v < 256; ++v) rank[v] = present[v] ? k++ : -1;
  for (size_t i = 0; i < n; ++i) REQUIRE(s.symbols[i] == rank[s.raw[i]]);

  const size_t bits = s.bit_count();
  const auto bs = qe::ea::bitstring(s, bits);
  size_t ones = 0;
  for (size_t i = 0; i < bits; ++i) {
    const size_t sample = i / s.bits_per_symbol;
    const int shift = s.bits_per_symbol - 1 - static_cast<int>(i % s.bits_per_symbol);
    REQUIRE(bs.data()[i] == ((s.raw[sample] >> shift) & 1));
    ones += bs.data()[i];
  }
  REQUIRE(qe::ea::bitstring_ones(s, bits) == ones);

  // What src/ea/assess.ts lets through to the tracks: 4,096 samples for the non-IID
  // track (MultiMCW's window) and 6,006 bits for its compression estimate; 1,000 for IID.
  // The tracks take milliseconds to seconds under ASan: run them on the inputs with bit 5 of
  // the first byte set, so the other half keeps the search through the reader fast.
  if (!(data[0] & 0x20)) return 0;
  if (n >= 4096 && bits >= 6006) {
    qe::ea::NonIidOptions options;
    options.conditioned = data[0] & 0x10;
    const qe::ea::NonIidResult r = qe::ea::assess_non_iid(s, options);
    REQUIRE(r.h_assessed >= 0 && r.h_assessed <= s.bits_per_symbol);
  }
  if (n >= 1000) {
    qe::ea::IidOptions options;
    options.shuffles = 2;  // the statistics on the data and two shuffles: the rest is repetition
    options.seed.assign(32, 7);
    const qe::ea::IidResult r = qe::ea::assess_iid(s, options);
    REQUIRE(r.h_assessed >= 0 && r.h_assessed <= s.bits_per_symbol);
  }
  return 0;
}
