// Uniform shuffles for the IID track's permutation test (§5.1): up to 10,000 shuffles of up
// to 10^8 samples, so the shuffle itself is a hot loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qe::ea {

// One xoshiro256** step (Blackman and Vigna) on the state s, its output in `result`: on
// 64-bit words, or on GCC vectors of them, where each lane is a stream of its own (the
// shuffle's AVX2 and AVX-512 batches). The multiplies by 5 and 9 are shifts and adds, which
// vector lanes have. Inlined always, so a vector step compiles with its caller's ISA.
template <typename Word>
[[gnu::always_inline]] inline void xoshiro_step(Word (&s)[4], Word& result) {
  const Word x = (s[1] << 2) + s[1];  // s1 * 5
  const Word rotated = (x << 7) | (x >> 57);
  result = (rotated << 3) + rotated;  // * 9
  const Word t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
}

// xoshiro256**; the caller seeds s from the OS CSPRNG.
struct Xoshiro {
  uint64_t s[4];
  uint64_t next() {
    uint64_t result;
    xoshiro_step(s, result);
    return result;
  }
};

// Fisher-Yates: every permutation equally likely. The positions are drawn with Lemire's
// multiply-and-reject, which has no modulo bias, from 32-bit halves of the generator's
// output (two draws per call, and a 64-bit product instead of a 128-bit one: about three
// times faster than full-width draws on 10^6 samples). With AVX2 or AVX-512 the draws come
// 64 at a time from four or eight streams seeded from rng (shuffle.cc), so the permutation a
// given rng gives differs from path to path; all are uniform.
void shuffle(std::vector<uint8_t>& data, Xoshiro& rng);

namespace detail {
// Each path alone, for the tests: the portable one, and the AVX2 and AVX-512 batches (false,
// data untouched, where the CPU lacks them).
void shuffle_portable(std::vector<uint8_t>& data, Xoshiro& rng);
bool shuffle_avx2(std::vector<uint8_t>& data, Xoshiro& rng);
bool shuffle_avx512(std::vector<uint8_t>& data, Xoshiro& rng);
}  // namespace detail

}  // namespace qe::ea
