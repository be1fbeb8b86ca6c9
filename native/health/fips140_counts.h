// The counting half of the FIPS 140-2 tests (fips140.h), as kernels for each instruction
// set: ones, nibbles and run lengths of one 20,000-bit block.
//
// Runs are counted by windows, not by run starts: if W(k) is the number of positions that
// start k consecutive bits equal to v, a run of length L >= k holds L - k + 1 such windows
// and L - k windows of k + 1, so W(k) - W(k+1) is the number of runs of v of length >= k.
// Counting W(1..7) is seven popcounts of a chain of shifted ANDs a word, with no carry
// between words, so eight words go side by side in an AVX-512 register. The same chain,
// carried on to kDeep bits, finds the few long runs from which the longest is measured.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace qe::fips140::detail {

// The kernels read the block as sequence words, most significant bit first (sequence bit
// 64w + j is bit 63 - j of word w): 312 whole words and 32 bits of a 313th. They load eight
// words at a time and "the next word" after each, so the block is handed over in a buffer
// of kPaddedBytes whose bytes past 2,500 are zero.
inline constexpr size_t kDataWords = 313;    // 20,000 bits = 312 words and 32 bits
inline constexpr size_t kVectorWords = 320;  // 40 vectors of eight words
inline constexpr size_t kPaddedBytes = (kVectorWords + 8) * 8;
inline constexpr size_t kPaddingNibbles = 2 * (kVectorWords * 8 - 2500);  // zero nibbles a vector kernel sees

// kValidBits[w]: the bits of sequence word w that belong to the block. The zeros' words are
// complements, so the padding is masked out of them with this; a vector kernel loads it at
// w and at w + 1, hence the eight words past kVectorWords.
inline constexpr std::array<uint64_t, kVectorWords + 8> kValidBits = [] {
  std::array<uint64_t, kVectorWords + 8> valid{};
  for (size_t w = 0; w + 1 < kDataWords; ++w) valid[w] = ~uint64_t{0};
  valid[kDataWords - 1] = 0xffffffff00000000ull;
  return valid;
}();

// Windows longer than seven bits are not counted, only looked for, up to kDeep bits; the
// positions starting kDeep equal bits are kept (they are few: about 10 per block and value
// in random data), and the longest run is measured from them alone.
inline constexpr uint32_t kDeep = 10;

// What a kernel writes (every element, so it needs no initialising).
struct Counts {
  std::array<uint32_t, 16> nibbles;
  // windows[v][k], k = 1..7: positions starting k consecutive bits equal to v ([v][0] unused).
  std::array<std::array<uint32_t, 8>, 2> windows;
  // longer[v][k - 8], k = 8..kDeep: some position starts k consecutive bits equal to v.
  std::array<std::array<bool, kDeep - 7>, 2> longer;
  // deep[v][w]: word w of the positions starting kDeep bits equal to v (bit order as the
  // sequence words); a run of L >= kDeep bits is a run of L - kDeep + 1 set bits here.
  std::array<std::array<uint64_t, kVectorWords>, 2> deep;
  // Bit w % 8 of nonzero_deep[v][w / 8]: deep[v][w] is not zero.
  std::array<std::array<uint8_t, kVectorWords / 8>, 2> nonzero_deep;
};

// 64-bit words with the CPU's popcount (or the compiler's) and no SIMD; any CPU.
void count_words(const uint8_t* padded, Counts& out);

// AVX-512 F + BW: eight words a vector, popcounts by nibble lookup. Falls back to
// count_words where not built (avx512_built()).
void count_avx512bw(const uint8_t* padded, Counts& out);
// AVX-512 F + BW + VPOPCNTDQ + VBMI2 (Ice Lake, Zen 4 and later): vpopcntq, and the shifted
// window of two words in one vpshldq.
void count_avx512_popcnt(const uint8_t* padded, Counts& out);
bool avx512_built();

}  // namespace qe::fips140::detail
