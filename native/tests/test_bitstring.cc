// The bit-string expansion behind the quality APIs' `random` field: MSB first, exact length,
// and a round trip through pack_bits.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bitstring/bitstring.h"
#include "tests/check.h"

using qe::bitstring::expand_bits;
using qe::bitstring::pack_bits;

QE_TEST(expands_most_significant_bit_first) {
  const uint8_t in[] = {0x80, 0x01, 0xA5};
  std::string out(24, '?');
  expand_bits(in, 24, out.data());
  CHECK_EQ(out, std::string("100000000000000110100101"));
}

QE_TEST(stops_at_a_bit_inside_a_byte) {
  const uint8_t in[] = {0xFF, 0xC3};
  // Every prefix length: exactly n characters written, nothing beyond.
  const std::string full = "1111111111000011";
  for (size_t n = 0; n <= 16; ++n) {
    std::string out(20, '#');
    expand_bits(in, n, out.data());
    CHECK_EQ(out.substr(0, n), full.substr(0, n));
    CHECK_EQ(out.substr(n), std::string(20 - n, '#'));
  }
}

QE_TEST(every_byte_value) {
  for (unsigned v = 0; v < 256; ++v) {
    const uint8_t in = static_cast<uint8_t>(v);
    std::string out(8, '?');
    expand_bits(&in, 8, out.data());
    std::string expected;
    for (int b = 7; b >= 0; --b) expected += ((v >> b) & 1U) ? '1' : '0';
    CHECK_EQ(out, expected);
  }
}

QE_TEST(round_trip_random_lengths) {
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 50; ++round) {
    const size_t nbits = rng() % 5000;
    std::vector<uint8_t> in((nbits + 7) / 8 + 1);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    std::string text(nbits, '?');
    expand_bits(in.data(), nbits, text.data());
    std::vector<uint8_t> back((nbits + 7) / 8 + 1, 0xEE);
    CHECK(pack_bits(text.data(), nbits, back.data()));
    for (size_t i = 0; i < nbits / 8; ++i) CHECK_EQ(static_cast<int>(back[i]), static_cast<int>(in[i]));
    if (nbits % 8 != 0) {
      const unsigned keep = 0xFFU << (8 - nbits % 8);
      CHECK_EQ(static_cast<int>(back[nbits / 8]), static_cast<int>(in[nbits / 8] & keep));
    }
    CHECK_EQ(static_cast<int>(back[(nbits + 7) / 8]), 0xEE);  // nothing written past the end
  }
}

QE_TEST(pack_rejects_other_characters) {
  uint8_t out[2] = {0, 0};
  CHECK(!pack_bits("0101x", 5, out));
  CHECK(!pack_bits("01 1", 4, out));
  CHECK(pack_bits("", 0, out));
}
