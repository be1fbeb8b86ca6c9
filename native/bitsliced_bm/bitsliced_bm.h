// Berlekamp-Massey over GF(2) on many blocks at once, bit-sliced: the linear complexity of
// each of `count` equal-length blocks, for the STS linear complexity test (thousands of
// 500-bit blocks per sequence) and the health gate's pattern check (the first 1,280 bits
// of every 1 KiB block of a read).
//
// 64 blocks run side by side, one per bit of a 64-bit word, after a 64x64 bit-matrix
// transpose of their bits. A polynomial is then an array of words indexed by degree, and
// each step of the algorithm (the discrepancy, the update C += x^(N-m) B, the length
// change) is a handful of word operations for all 64 blocks, in branch-free loops the
// compiler vectorises. The 64 lengths are bit-sliced too in the portable build, so a
// step's length changes are a few word operations however many lanes change; the vector
// builds keep them as 16-bit elements (a compare and a masked subtract a step, for M up to
// 32,767; a longer M runs the portable build). There is no chain of dependent steps
// per block, as the one-string algorithm (health/berlekamp_massey.h) has: per block this
// costs about 2.4 us for 1,280 bits with AVX2 here (2.0 us with AVX-512), against about
// 4.2 us one string at a time, but a batch of 64 costs the same whatever its count, so the
// one-string code stays the better choice below ~30 blocks (pattern.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qe::bitsliced_bm {

// An MSB-first bit stream held as 64-bit words (bit i is bit 63 - i % 64 of word i / 64,
// as sts::Bits) or as bytes (bit i is bit 7 - i % 8 of byte i / 8, as raw entropy). Bits
// past the end read as 0.
struct WordStream {
  const uint64_t* words;
  size_t nwords;
};
struct ByteStream {
  const uint8_t* bytes;
  size_t nbytes;
};

// Portable: plain C++ for any CPU. Avx2 and Avx512: the same text compiled for AVX2, and
// for AVX2 + AVX-512 F/VL/BW (still 256-bit vectors; vpternlog merges each loop's logic into
// one instruction), each only where GCC builds it and the CPU has it (see available()).
// Best: the fastest available here.
enum class Build { Portable, Avx2, Avx512, Best };
bool available(Build build);

// complexity[b] = the linear complexity of the M bits from bit first + b * stride, for
// b < count.
void linear_complexities(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity,
                         Build build = Build::Best);
void linear_complexities(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity,
                         Build build = Build::Best);

namespace detail {
// The two builds' entry points (bitsliced_bm.cc, bitsliced_bm_avx2.cc).
void words_portable(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
void bytes_portable(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
void words_avx2(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
void bytes_avx2(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
void words_avx512(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
void bytes_avx512(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity);
bool avx2_built();  // false where the compiler could not build that copy
bool avx512_built();
}  // namespace detail

}  // namespace qe::bitsliced_bm
