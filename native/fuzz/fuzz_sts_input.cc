// libFuzzer target for the STS input readers (scripts/test-fuzz.sh runs it; docs/fuzzing.md):
// '0'/'1' text with whitespace (bits_from_ascii, and pack_bits/expand_bits of the quality
// API's `random` field), raw bytes (bits_from_bytes) and the slicing of a packed stream
// into sequences (extract_bits, slice, stream_period).
//
// Properties checked, beyond "no crash, no sanitizer report":
//  * bits_from_ascii accepts exactly the inputs made of '0', '1' and ASCII whitespace, and
//    its bits are those characters in order (checked against a one-character-at-a-time
//    reading), with the bits past n zero;
//  * pack_bits then expand_bits gives the text back;
//  * extract_bits and slice of bits_from_bytes agree for every start and length tried.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bitstring/bitstring.h"
#include "sts/battery.h"
#include "sts/sts.h"
#include "fuzz/require.h"

namespace {

bool bit_at(const qe::sts::Bits& b, size_t i) { return (b.words[i / 64] >> (63 - i % 64)) & 1; }

// Bits past n in the last word are zero, and there are exactly ceil(n / 64) words.
void well_formed(const qe::sts::Bits& b) {
  REQUIRE(b.words.size() == (b.n + 63) / 64);
  if (b.n % 64 != 0) REQUIRE((b.words.back() << (b.n % 64)) == 0);
}

bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

void check_ascii(const uint8_t* data, size_t size, size_t max_bits) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string digits;  // the reading one character at a time
  bool valid = true;
  for (unsigned char c : text) {
    if (max_bits != 0 && digits.size() == max_bits) break;
    if (c == '0' || c == '1') digits.push_back(static_cast<char>(c));
    else if (!is_space(c)) { valid = false; break; }
  }
  try {
    const qe::sts::Bits bits = qe::sts::bits_from_ascii(text, max_bits);
    REQUIRE(valid);
    REQUIRE(bits.n == digits.size());
    well_formed(bits);
    for (size_t i = 0; i < bits.n; ++i) REQUIRE(bit_at(bits, i) == (digits[i] == '1'));
  } catch (const std::invalid_argument&) {
    REQUIRE(!valid);
  }

  // The quality API's packing: the text of bits, exactly.
  std::string packed((size + 7) / 8, '\0');
  auto* out = reinterpret_cast<uint8_t*>(packed.data());
  const bool ok = qe::bitstring::pack_bits(text.data(), size, out);
  bool all_bits = true;
  for (unsigned char c : text) all_bits = all_bits && (c == '0' || c == '1');
  REQUIRE(ok == all_bits);
  if (ok) {
    std::string again(size, '\0');
    qe::bitstring::expand_bits(out, size, again.data());
    REQUIRE(again == text);
  }
}

void check_bytes(const uint8_t* data, size_t size) {
  if (size < 2) return;
  // The first two bytes choose a length and a start; the rest is the stream.
  const size_t nbits = (size - 2) * 8;
  const size_t want = nbits == 0 ? 0 : data[0] % (nbits + 1);
  const uint8_t* stream = data + 2;
  const qe::sts::Bits all = qe::sts::bits_from_bytes(stream, size - 2, nbits);
  well_formed(all);
  for (size_t i = 0; i < nbits; ++i) REQUIRE(bit_at(all, i) == ((stream[i / 8] >> (7 - i % 8)) & 1));
  const qe::sts::Bits first = qe::sts::bits_from_bytes(stream, size - 2, want);
  well_formed(first);
  REQUIRE(first.n == want);

  const size_t start = nbits == 0 ? 0 : data[1] % (nbits + 1);
  const size_t count = (nbits - start) == 0 ? 0 : want % (nbits - start + 1);
  const qe::sts::Bits sliced = qe::sts::slice(all, start, count);
  const qe::sts::Bits extracted = qe::sts::extract_bits(stream, start, count);
  well_formed(sliced);
  REQUIRE(sliced.n == extracted.n && sliced.words == extracted.words);
  bool threw = false;
  try {
    (void)qe::sts::slice(all, start, nbits - start + 1);
  } catch (const std::out_of_range&) {
    threw = true;
  }
  REQUIRE(threw);
  try {
    (void)qe::sts::bits_from_bytes(stream, size - 2, nbits + 1);
    REQUIRE(false);
  } catch (const std::invalid_argument&) {
  }

  const size_t period = qe::sts::stream_period(stream, nbits);
  REQUIRE(period == 0 || period <= nbits / 2);
  if (period != 0) {
    for (size_t i = 0; i + period < nbits; ++i) REQUIRE(bit_at(all, i) == bit_at(all, i + period));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_ascii(data, size, 0);
  if (size > 0) check_ascii(data + 1, size - 1, data[0]);
  check_bytes(data, size);
  return 0;
}
