// The bit-sliced Berlekamp-Massey (bitsliced_bm/bitsliced_bm.h): every block's linear
// complexity, in both builds and from both stream forms, against the pattern check's
// earlier bit-packed algorithm (tests/bm_reference.h), on random and structured blocks.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "tests/bm_reference.h"
#include "tests/check.h"

namespace {

using qe::bitsliced_bm::Build;

// A stream of `nbits` bits made of blocks of M bits (block b at bit first + b * stride):
// random ones, and every fifth kind of block structured so that L sits at the ends of
// its range (all zeros: 0; a single one at the end: M; a short period; random then zeros).
struct Stream {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> words;
  bool bit(size_t i) const { return (bytes[i >> 3] >> (7 - (i & 7))) & 1; }
};

Stream make_stream(size_t first, size_t stride, size_t M, size_t count, uint64_t seed) {
  const size_t nbits = first + (count == 0 ? 0 : (count - 1) * stride + M) + 64;
  std::mt19937_64 rng(seed);
  Stream s;
  s.bytes.resize((nbits + 7) / 8);
  for (uint8_t& b : s.bytes) b = static_cast<uint8_t>(rng());
  auto set = [&](size_t i, bool v) {
    const uint8_t mask = static_cast<uint8_t>(0x80u >> (i & 7));
    s.bytes[i >> 3] = v ? (s.bytes[i >> 3] | mask) : (s.bytes[i >> 3] & ~mask);
  };
  for (size_t b = 0; b < count; ++b) {
    const size_t at = first + b * stride;
    for (size_t k = 0; k < M; ++k) {
      switch (b % 10) {
        case 1: set(at + k, false); break;
        case 3: set(at + k, k + 1 == M); break;
        case 5: set(at + k, k % (b % 7 + 2) == 0); break;
        case 7: if (k >= M / 2) set(at + k, false); break;
        default: break;  // random
      }
    }
  }
  s.words.assign((s.bytes.size() + 7) / 8, 0);
  for (size_t i = 0; i < s.bytes.size(); ++i) s.words[i / 8] |= uint64_t{s.bytes[i]} << (56 - 8 * (i % 8));
  return s;
}

size_t reference_of_block(const Stream& s, size_t at, size_t M) {
  std::vector<uint8_t> block((M + 7) / 8, 0);
  for (size_t k = 0; k < M; ++k)
    if (s.bit(at + k)) block[k >> 3] |= static_cast<uint8_t>(0x80u >> (k & 7));
  return qe::test::reference_linear_complexity(block.data(), M);
}

}  // namespace

QE_TEST(every_block_matches_the_reference_in_both_builds_and_stream_forms) {
  struct Layout {
    size_t first, stride_extra, M, count;
  };
  // Contiguous and spaced blocks, unaligned starts, M across word boundaries, batches of
  // 64 and partial ones, the health gate's layout (1,280 bits of every 1 KiB block).
  const Layout layouts[] = {{0, 0, 1, 70},     {5, 0, 2, 65},    {3, 1, 7, 64},      {0, 0, 63, 130},
                            {64, 0, 64, 9},    {1, 3, 65, 100},  {7, 0, 97, 150},    {0, 0, 500, 200},
                            {0, 8192 - 1280, 1280, 70}, {11, 9, 1281, 3}, {0, 0, 4096, 2}};
  uint64_t seed = 1;
  size_t blocks = 0;
  for (const Layout& l : layouts) {
    const size_t stride = l.M + l.stride_extra;
    const Stream s = make_stream(l.first, stride, l.M, l.count, seed++);
    for (const Build build : {Build::Portable, Build::Avx2, Build::Avx512}) {
      if (!qe::bitsliced_bm::available(build)) continue;
      std::vector<size_t> from_words(l.count), from_bytes(l.count);
      qe::bitsliced_bm::linear_complexities(qe::bitsliced_bm::WordStream{s.words.data(), s.words.size()}, l.first,
                                            stride, l.M, l.count, from_words.data(), build);
      qe::bitsliced_bm::linear_complexities(qe::bitsliced_bm::ByteStream{s.bytes.data(), s.bytes.size()}, l.first,
                                            stride, l.M, l.count, from_bytes.data(), build);
      for (size_t b = 0; b < l.count; ++b) {
        const size_t want = reference_of_block(s, l.first + b * stride, l.M);
        if (from_words[b] != want || from_bytes[b] != want) {
          qe::check::fail(__FILE__, __LINE__,
                          std::string(build == Build::Portable ? "portable" : build == Build::Avx2 ? "AVX2" : "AVX-512") +
                              ", M = " +
                              std::to_string(l.M) + ", block " + std::to_string(b) + ": words " +
                              std::to_string(from_words[b]) + ", bytes " + std::to_string(from_bytes[b]) +
                              ", reference " + std::to_string(want));
          return;
        }
        ++blocks;
      }
    }
  }
  CHECK(blocks > 1000);
}

QE_TEST(a_zero_length_block_has_complexity_zero) {
  const uint8_t bytes[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  size_t out[3] = {9, 9, 9};
  qe::bitsliced_bm::linear_complexities(qe::bitsliced_bm::ByteStream{bytes, 8}, 0, 8, 0, 3, out);
  CHECK_EQ(out[0] + out[1] + out[2], size_t{0});
}
