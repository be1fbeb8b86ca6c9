// Building bit sequences: from '0'/'1' text, from raw bytes (MSB first), and slices.
// Everything packs into 64-bit words most-significant-bit first, with the bits past n in
// the last word zero, which the word-level tests rely on.
#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sts/sts.h"

namespace qe::sts {
namespace {

bool is_ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string describe_byte(unsigned char c) {
  static const char* const hex = "0123456789abcdef";
  std::string s = "byte 0x";
  s += hex[c >> 4];
  s += hex[c & 15];
  if (c >= 0x21 && c < 0x7f) {
    s += " ('";
    s += static_cast<char>(c);
    s += "')";
  }
  return s;
}

}  // namespace

Bits bits_from_ascii(std::string_view text, size_t max_bits) {
  Bits out;
  const size_t limit = max_bits == 0 ? text.size() : std::min(max_bits, text.size());
  out.words.reserve((limit + 63) / 64);
  uint64_t word = 0;
  unsigned filled = 0;
  size_t n = 0;
  auto append = [&](uint64_t value, unsigned count) {  // count <= 8 bits, MSB first
    if (filled + count <= 64) {
      word = (word << count) | value;
      filled += count;
    } else {
      const unsigned first = 64 - filled;
      const unsigned rest = count - first;
      out.words.push_back((word << first) | (value >> rest));
      word = value & ((uint64_t{1} << rest) - 1);
      filled = rest;
    }
    if (filled == 64) {
      out.words.push_back(word);
      word = 0;
      filled = 0;
    }
    n += count;
  };
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size() && n < limit) {
    // Fast path: eight '0'/'1' characters at once. Each byte of v is 0x30 or 0x31
    // exactly when v & 0xFE.. is 0x30..; the multiply gathers the low bits of the eight
    // bytes into the top byte, first character most significant (little-endian load).
    if constexpr (std::endian::native == std::endian::little) {
      if (i + 8 <= text.size() && n + 8 <= limit) {
        uint64_t v;
        std::memcpy(&v, p + i, 8);
        if ((v & 0xFEFEFEFEFEFEFEFEull) == 0x3030303030303030ull) {
          append(((v - 0x3030303030303030ull) * 0x8040201008040201ull) >> 56, 8);
          i += 8;
          continue;
        }
      }
    }
    const unsigned digit = static_cast<unsigned>(p[i]) - '0';
    if (digit <= 1) {
      append(digit, 1);
    } else if (!is_ascii_space(p[i])) {
      throw std::invalid_argument("invalid " + describe_byte(p[i]) + " at offset " + std::to_string(i) +
                                  ": expected '0', '1' or whitespace");
    }
    ++i;
  }
  if (filled > 0) out.words.push_back(word << (64 - filled));
  out.n = n;
  return out;
}

Bits bits_from_bytes(const uint8_t* data, size_t nbytes, size_t nbits) {
  if (nbits > nbytes * 8) {
    throw std::invalid_argument("bits_from_bytes: " + std::to_string(nbits) + " bits requested from " +
                                std::to_string(nbytes) + " bytes");
  }
  Bits out;
  out.n = nbits;
  const size_t used_bytes = (nbits + 7) / 8;
  out.words.assign((nbits + 63) / 64, 0);
  size_t b = 0;
  for (size_t w = 0; w < out.words.size(); ++w) {
    uint64_t word = 0;
    for (int k = 0; k < 8; ++k, ++b) word = (word << 8) | (b < used_bytes ? data[b] : 0u);
    out.words[w] = word;
  }
  if (nbits % 64 != 0) out.words.back() &= ~uint64_t{0} << (64 - nbits % 64);
  return out;
}

Bits slice(const Bits& src, size_t start, size_t count) {
  if (start > src.n || count > src.n - start) {
    throw std::out_of_range("slice: " + std::to_string(count) + " bits from offset " + std::to_string(start) +
                            " exceed a " + std::to_string(src.n) + "-bit sequence");
  }
  Bits out;
  out.n = count;
  out.words.assign((count + 63) / 64, 0);
  const size_t first = start / 64;
  const unsigned shift = start % 64;
  const size_t src_words = src.words.size();
  for (size_t w = 0; w < out.words.size(); ++w) {
    const uint64_t hi = src.words[first + w];
    if (shift == 0) {
      out.words[w] = hi;
    } else {
      const uint64_t lo = first + w + 1 < src_words ? src.words[first + w + 1] : 0;
      out.words[w] = (hi << shift) | (lo >> (64 - shift));
    }
  }
  if (count % 64 != 0) out.words.back() &= ~uint64_t{0} << (64 - count % 64);
  return out;
}

}  // namespace qe::sts
